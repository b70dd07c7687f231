// A function with an opaque kernel (softmax) and a call to another function.
func @scale {
  tensor @a : input float32[2,4]
  tensor @r : output float32[2,4]
^bb0:
  %a = affine_load @a : float32[2,4]
  %s = mul %a, float32 0.5 : float32[2,4]
  affine_store %s, @r
}

func @main {
  tensor @x : input float32[2,4]
  tensor @sm : internal float32[2,4]
  tensor @y : output float32[2,4]
^bb0:
  opaque "softmax" ins(@x) outs(@sm)
  call @scale ins(@sm) outs(@y)
}
