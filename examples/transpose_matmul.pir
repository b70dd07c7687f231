// y = x @ W where x^T is formed on the PE: matmul(stationary=x, moving=I) = x^T.
func @main {
  tensor @x : input float32[3,4]
  tensor @ident : const float32[3,3] = dense "AACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAAAAAAAAAAAAIA/"
  tensor @w : const float32[4,2] = dense "AACAvwAAIL8AAIC+AAAAPgAAAD8AAGA/AACgPwAA0D8="
  tensor @y : output float32[3,2]
^bb0:
  %x = affine_load @x : float32[3,4]
  %ident = sb_atom_load @ident : float32[3,3]
  %xT = matmul %x, %ident : float32[4,3]
  %w = sb_atom_load @w : float32[4,2]
  %y = matmul %xT, %w : float32[3,2]
  affine_store %y, @y
}
