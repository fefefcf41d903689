// The integer matmul's tile rows (BM): one constant for the host and the kernel. glsl/nn/imatmul.comp
// includes this file, and src/nn/imatmul_plan.hpp includes it as C++ (kIMatmulTileRows), so that
// the plan's invocations, shared-memory bytes, K-tile checks and grid agree with the kernel's
// tiling. Only comments and one preprocessor line, which both languages read alike.
#define IMATMUL_TILE_ROWS 64u
