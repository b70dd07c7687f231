// A partition-broadcast load: one [1,8] row replicated over 4 partitions, with bf16 data.
func @main {
  tensor @x : input bfloat16[4,8]
  tensor @row : input float32[1,8]
  tensor @y : output bfloat16[4,8]
^bb0:
  %row = sb_atom_load @row broadcast : float32[4,8]
  %x = affine_load @x : bfloat16[4,8]
  %s = sub %x, %row : bfloat16[4,8]
  %e = exp %s : float32[4,8]
  %c = cast %e : bfloat16[4,8]
  affine_store %c, @y
}
