// An MLP layer y = relu(x @ W + b) with fp32 weights. The activation arrives transposed
// (xT is [features, batch]) as the PE wants it; the bias row is partition-broadcast over the batch.
func @main {
  tensor @xT : input float32[4,2]
  tensor @w : const float32[4,3] = dense "AACwvwAAkL8AAGC/AAAgvwAAwL4AAAC+AAAAPgAAwD4AACA/AABgPwAAkD8AALA/"
  tensor @b : const float32[1,3] = splat 0.25
  tensor @y : output float32[2,3]
^bb0:
  %xT = affine_load @xT : float32[4,2]
  %w = sb_atom_load @w : float32[4,3]
  %b = sb_atom_load @b broadcast : float32[2,3]
  %mm = matmul %xT, %w : float32[2,3]
  %h = add %mm, %b : float32[2,3]
  %y = relu %h : float32[2,3]
  affine_store %y, @y
}
