/* cu_row_blocks.cuh - the launch shape of the register-row kernels of softmax, log_softmax and
 * layer_norm (a row read once into registers): threads a block and blocks a grid. */
#ifndef CTENSOR_CU_ROW_BLOCKS_CUH_
#define CTENSOR_CU_ROW_BLOCKS_CUH_

#include "cu_call.h"

/* Threads of a register-row block: eight one-warp groups, or one wider group of 64 to 1024
 * (ct_cu_group_reduce combines over the whole block when its group is wider than a warp). */
__host__ __device__ constexpr int ct_cu_row_block(int width) {
  return width > 32 ? width : 256;
}

/* A block per `per_block` rows, up to 256 blocks an SM: these blocks hold so many registers
 * that few are resident, and a grid of a few rounds of them would leave part of the last round
 * idle; with dozens of rounds, little. */
inline unsigned ct_cu_row_blocks(const ct_cu_exec& exec, int64_t rows, int per_block) {
  const int64_t needed = (rows + per_block - 1) / per_block;
  const int64_t most = (int64_t)ct_cu_multiprocessors(exec.device_id) * 256;
  return (unsigned)(needed < most ? needed : most > 0 ? most : 1);
}

#endif /* CTENSOR_CU_ROW_BLOCKS_CUH_ */
