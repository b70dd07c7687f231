// An integer index path: row ids are scaled and offset by a tensor-scalar GEP, then used to gather
// rows of a table; the gathered rows are also scattered back into a second output.
func @main {
  tensor @ids : input int32[3]
  tensor @table : input float32[8,4]
  tensor @rows : internal int32[3]
  tensor @out : output float32[3,4]
  tensor @scatter : output float32[8,4]
^bb0:
  %ids = affine_load @ids : int32[3]
  %ids2 = mul %ids, int32 2 : int32[3]
  tensor_scalar_gep.add %ids2, int32 1 -> @rows
^bb1:
  %rows = affine_load @rows : int32[3]
  %g = generic_load @table[%rows] : float32[3,4]
  affine_store %g, @out
  generic_store %g, @scatter[%rows]
}
