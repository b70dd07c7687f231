// out = where(x > t, x * 2, 0): a comparison makes a uint8 predicate for select.
func @main {
  tensor @x : input float32[4,8]
  tensor @t : input float32[4,8]
  tensor @out : output float32[4,8]
^bb0:
  %x = affine_load @x : float32[4,8]
  %t = affine_load @t : float32[4,8]
  %mask = cmp_gt %x, %t : uint8[4,8]
  %x2 = mul %x, float32 2.0 : float32[4,8]
  %r = select %mask, %x2, float32 0.0 : float32[4,8]
  affine_store %r, @out
}
