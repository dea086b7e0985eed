//===- HalideGen.h - One attn-level kernel as a Halide pipeline -*- C++ -*-===//
//
// The translation of the attn ops (AttnOps.td gives each op's semantics) to
// Halide Funcs, and the stages that attnc's own schedules (HalideSchedule.h)
// then place. Internal to the Halide backend.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LIB_HALIDE_HALIDEGEN_H
#define ATTNC_LIB_HALIDE_HALIDEGEN_H

#include "Halide.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

#include "attn/Target/ElementType.h"

namespace mlir {
class Type;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace attnc::halide {

/// What attnc's schedules know of the target.
struct ScheduleTarget {
  /// f32 lanes of one vector register (8: AVX2, 16: AVX-512, 4: NEON).
  int vectorLanes = 8;
  /// Vector registers (16: AVX2, 32: AVX-512 and NEON).
  int vectorRegisters = 16;
  /// Whether loops may run on the thread pool (--parallel, the JIT).
  bool parallel = false;
  /// GEMMs of two bf16 operands sum k in vdpbf16ps's pairs, on that
  /// instruction: the MLIR backend's choice for the CPU
  /// (mlir::attn::CpuSchedule::bf16Dot), where Halide's target has it too.
  bool bf16Dot = false;
};

/// A Func that attnc's schedule computes on its own (compute_root), with
/// the code that schedules it for a target.
struct Stage {
  Halide::Func func;
  std::function<void(const ScheduleTarget &)> schedule;
};

/// A state the kernel updates (a KV cache): its new rows are pipeline
/// outputs, which the kernel's wrapper copies into the state's buffer
/// after the pipeline ran (Halide leaves a buffer that is both an input
/// and an output undefined).
struct StateWrite {
  /// The state's index among the kernel's arguments.
  unsigned argument = 0;
  /// [B, L, W]: the state; [B, T, W]: the rows written, entry b's at rows
  /// at[b] .. at[b] + T - 1.
  std::vector<int64_t> stateShape, rowsShape;
  mlir::attn::ElementType type = mlir::attn::ElementType::F32;
};

/// A kernel as a Halide pipeline.
struct KernelPipeline {
  /// The kernel's inputs and params, in the ABI's order.
  std::vector<Halide::ImageParam> arguments;
  /// The row-major shape of each argument.
  std::vector<std::vector<int64_t>> argumentShapes;
  /// Its outputs in `output` order; for each of `stateWrites`, its rows
  /// (the state's storage type, [B, T, W]) and where they go (Int(32),
  /// [B]); then the status: an Int(32) Func of no dimensions counting the
  /// embeddings given an id out of range, or ATTNC_STATUS_CACHE_POSITION.
  std::vector<Halide::Func> outputs;
  /// The row-major shape of each output (the status: none).
  std::vector<std::vector<int64_t>> outputShapes;
  /// The states the kernel updates, in result order.
  std::vector<StateWrite> stateWrites;
  /// Every computed stage, producers first.
  std::vector<Stage> stages;
};

/// Builds the pipeline of `kernel` (a public func.func of attn ops, func.call
/// of other blocks of the module, func.return). An op the backend does not
/// translate is an error naming it and its location. `clampReads` clamps
/// every read of an argument or constant table to its bounds: for the
/// autoschedulers, whose tilings may compute a Func past the region its
/// consumers need (Adams2019 read a weight at row -88), which attnc's own
/// schedules never do. `bf16Pairs`: GEMMs of two bf16 operands are defined
/// as sums of k's pairs, for attnc's schedule of them on vdpbf16ps
/// (ScheduleTarget::bf16Dot).
llvm::Expected<KernelPipeline>
buildKernelPipeline(mlir::func::FuncOp kernel, bool clampReads, bool bf16Pairs);

/// Constrains every argument's and output's buffer to the kernel's dense,
/// row-major shapes (so that Halide specializes for them) and gives the
/// autoschedulers those shapes as estimates.
void constrainShapes(KernelPipeline &pipeline);

/// The Halide type of an element type of the table (attn/Target/
/// ElementType.h): its Halide code and width.
Halide::Type halideTypeOf(mlir::Type element);

/// The Halide type a kernel buffer of `element` holds: its value type, but
/// uint16 for bf16 and f16. Halide marks its own bf16/f16 vector loads and
/// stores of a buffer as aligned to the vector, which the ABI does not
/// promise (a vmovdqa of a caller's buffer faulted); its integer accesses
/// assume only the element's alignment. The pipeline reinterprets the bits.
Halide::Type halideStorageTypeOf(mlir::attn::ElementType element);

/// `value` as its buffer stores it, and back (halideStorageTypeOf).
Halide::Expr storedAs(const Halide::Expr &value);
Halide::Expr loadedAs(const Halide::Expr &bits, Halide::Type value);

} // namespace attnc::halide

#endif // ATTNC_LIB_HALIDE_HALIDEGEN_H
