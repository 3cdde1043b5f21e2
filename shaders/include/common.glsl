// Shared by every ServeScope compute shader: the version, and the mapping from a workgroup's
// position in a 2-D grid to a linear index (a dispatch has at most 65535 groups per axis, so
// long row counts spread over y as well).
#extension GL_EXT_control_flow_attributes : enable

uint linear_workgroup() {
  return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
