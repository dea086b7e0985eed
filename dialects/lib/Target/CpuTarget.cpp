//===- CpuTarget.cpp - The CPU target description and its schedule -------===//

#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::attn;

bool CpuTargetDescription::hasFeature(llvm::StringRef name) const {
  return llvm::is_contained(features, name);
}

std::string CpuTargetDescription::summary() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << arch << " " << cpu << ": " << vectorBits << "-bit x " << vectorRegisters
     << " vector registers, "
     << (fma ? "fma x " + std::to_string(fmaUnits) : std::string("no fma"))
     << ", " << cacheLineBytes << " B lines, L1d " << l1dBytes / 1024
     << " KiB, L2 " << l2BytesPerCore / 1024 << " KiB; features "
     << (features.empty() ? std::string("(none)") : llvm::join(features, ","));
  return text;
}

std::string CpuSchedule::format() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto line = [&](llvm::StringRef name, int64_t value) {
    os << name << " = " << value << "\n";
  };
  line("vector-lanes", vectorLanes);
  line("gemm-rows", gemmRows);
  line("gemm-columns", gemmColumns);
  line("gemm-depth", gemmDepth);
  line("gemm-pack-row-blocks", gemmPackRowBlocks);
  line("gemv-chunk-steps", gemvChunkSteps);
  line("gemv-block-steps", gemvBlockSteps);
  line("gemv-prefetch-steps", gemvPrefetchSteps);
  line("strip-elements", stripElements);
  line("max-vector-row", maxVectorRow);
  line("transpose-block", transposeBlock);
  line("attention-rows", attentionRows);
  line("attention-keys", attentionKeys);
  line("attention-accumulators", attentionAccumulators);
  line("attention-chunk-lanes", attentionChunkLanes);
  line("attention-row-blocks-per-sweep", attentionRowBlocksPerSweep);
  line("attention-softmax-blocks", attentionSoftmaxBlocks);
  line("decode-keys", decodeKeys);
  line("decode-rows", decodeRows);
  line("decode-prefetch-keys", decodePrefetchKeys);
  line("memory-bound-rows", memoryBoundRows);
  line("parallel-flops", parallelFlops);
  line("parallel-elements", parallelElements);
  line("packed-alignment-floats", packedAlignmentFloats);
  line("prefetch-stride-floats", prefetchStrideFloats);
  os << "bf16-dot = "
     << (bf16Dot == Bf16Dot::Vdpbf16ps ? "vdpbf16ps"
         : bf16Dot == Bf16Dot::Bfdot   ? "bfdot"
                                       : "none")
     << "\n";
  line("bf16-amx", bf16Amx);
  line("amx-panel-bytes", amxPanelBytes);
  return text;
}

CpuSchedule attn::deriveCpuSchedule(const CpuTargetDescription &target) {
  CpuSchedule s;
  // The schedules compute in f32 (docs/spec.md §2 "Numerics": each op computes
  // in f32, whatever its operands hold).
  s.vectorLanes = std::max<int64_t>(1, target.lanes(ElementType::F32));
  // A register block of C keeps rows x columnVectors accumulators live
  // across the k loop; the remaining quarter of the registers holds the
  // vectors of B and the broadcasts of A (BLIS and MLAS do the same: 24 of
  // 32 zmm on AVX-512, 12 of 16 ymm on AVX2, 24 of 32 on NEON).
  int64_t accumulators = std::max<int64_t>(1, target.vectorRegisters * 3 / 4);
  int64_t columnVectors = std::max<int64_t>(1, target.vectorRegisters / 8);
  s.gemmRows = std::max<int64_t>(1, accumulators / columnVectors);
  s.gemmColumns = columnVectors * s.vectorLanes;
  // k per slice: 256 on Zen 5 with 32 zmm (B read in place, 64 columns;
  // measured, no formula found yet); with 16 registers (16 columns, B's
  // slices packed) as deep as half the L2 holds of a packed slice: fewer
  // loads and stores of C, and the slice streams from L2 (measured on Zen 3,
  // 512 KiB L2: k = 256, 512, 1024 and 3072 each faster than the one before;
  // docs/performance.md).
  s.gemmDepth =
      target.vectorRegisters >= 32
          ? 256
          : std::max<int64_t>(
                256,
                int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(
                    1, target.l2BytesPerCore / 2 / (s.gemmColumns * 4))))));
  s.gemmPackRowBlocks = 4;
  // A one-row GEMM's chunks of B: 64 rows of 768 floats are 192 KiB, a
  // stream long enough for the prefetchers, and a 768 x 768 weight still
  // gives 12 chunks to the threads; 4 rows of B per block of C loads and
  // stores make those a quarter of the loads of B.
  s.gemvChunkSteps = 64;
  s.gemvBlockSteps = 4;
  // 16 rows ahead: 48 KiB for 768 columns, far enough to cover the
  // memory's latency, near enough to stay in L2.
  s.gemvPrefetchSteps = 16;
  // Four vectors per strip: enough independent work per iteration to hide
  // load latency, few enough to stay in registers.
  s.stripElements = 4 * s.vectorLanes;
  s.maxVectorRow = 1024;
  s.transposeBlock = std::max<int64_t>(1, target.cacheLineBytes / 4);
  // Flash attention: the scores of a row block against a key block are
  // rows x (keys / lanes) accumulators, and p @ v keeps its own. The online
  // softmax holds more live vectors than a GEMM (masks, maxima, sums): with
  // 32 registers three quarters still fit (6 x 64 on AVX-512), with 16 only
  // half (4 x 16 on AVX2, measured; 6 x 16 spilled).
  int64_t attentionBudget =
      target.vectorRegisters >= 32
          ? accumulators
          : std::max<int64_t>(1, target.vectorRegisters / 2);
  s.attentionKeys = columnVectors * s.vectorLanes;
  s.attentionRows = std::max<int64_t>(1, attentionBudget / columnVectors);
  s.attentionAccumulators = attentionBudget;
  s.attentionChunkLanes = s.vectorLanes;
  s.attentionRowBlocksPerSweep = 8;
  // Each step of the online softmax covers 64 keys (4 blocks of 16 on AVX2
  // and NEON, one of 64 on AVX-512): the output rows are rescaled and the
  // maxima and sums reduced once per 64 keys, while the step's rows of k
  // and v still fit L1 beside the rest (measured on Zen 3, AVX2, head dim
  // 64: 32, 64 and 128 keys per step gave 193, 183 and 191 ms on
  // (1, 2048, 512, 8), 16 keys 209).
  s.attentionSoftmaxBlocks = std::max<int64_t>(1, 64 / s.attentionKeys);
  // A decode step's chunk of keys: enough chunks at L = 1024 for two
  // threads even with one kv head, few enough that each one's rows of k
  // and v (64 KiB each for d = 64 in f32) stream from memory in long runs.
  s.decodeKeys = 256;
  // The kv heads of a decode step together (12 of GPT-2's, Llama's 8 x 4
  // query rows): a pass reads whole cache rows, a sequential stream, while
  // a chunk's scores (keys x rows) stay within the L2.
  s.decodeRows = 64;
  // Far enough ahead to cover the memory latency at a few ns per key.
  s.decodePrefetchKeys = 16;
  s.parallelFlops = int64_t(1) << 20;
  s.parallelElements = int64_t(1) << 18;
  s.packedAlignmentFloats = std::max<int64_t>(1, target.cacheLineBytes / 4);
  s.prefetchStrideFloats = std::max<int64_t>(1, target.cacheLineBytes / 4);
  // vdpbf16ps on zmm for the bf16 pair GEMMs (its ymm/xmm forms, for fewer
  // columns, need AVX512VL) where it doubles the f32 FMA rate (Zen 4 and 5).
  // Intel's AVX512-BF16 CPUs with AMX (Sapphire Rapids on) issue it at half
  // their FMA rate (docs/performance.md): FMAs on widened pairs, the same
  // sums, are faster there.
  if (target.hasFeature("avx512bf16") && target.hasFeature("avx512vl") &&
      target.vectorBits >= 512 && !target.hasFeature("amx-bf16"))
    s.bf16Dot = CpuSchedule::Bf16Dot::Vdpbf16ps;
  // bfdot on AArch64 CPUs with the BF16 extension (Neoverse V1/N2 on, Apple
  // M2 on): two products per lane, twice the lanes' multiplies of an fmla.
  if (target.arch == "aarch64" && target.hasFeature("bf16") &&
      target.hasFeature("neon"))
    s.bf16Dot = CpuSchedule::Bf16Dot::Bfdot;
  // tdpbf16ps on 16 x 16 tiles of C (the features are listed for Linux
  // only: the tile state needs the kernel's permission). Every AMX-BF16 CPU
  // has AVX512-BF16, which the attention's AMX loop uses beside the tiles.
  s.bf16Amx = target.hasFeature("amx-bf16") && target.hasFeature("amx-tile") &&
              target.hasFeature("avx512bf16");
  s.amxPanelBytes = target.l2BytesPerCore / 2;
  return s;
}

namespace {

// The keys of the DLTI device spec. Upstream's names where upstream has
// them (max_vector_op_width, L1_cache_size_in_bytes).
constexpr llvm::StringLiteral kArch = "arch";
constexpr llvm::StringLiteral kCpu = "cpu";
constexpr llvm::StringLiteral kVectorBits = "max_vector_op_width";
constexpr llvm::StringLiteral kVectorRegisters = "vector_registers";
constexpr llvm::StringLiteral kFma = "fma";
constexpr llvm::StringLiteral kFmaUnits = "fma_units";
constexpr llvm::StringLiteral kCacheLine = "cache_line_size_in_bytes";
constexpr llvm::StringLiteral kL1d = "L1_cache_size_in_bytes";
constexpr llvm::StringLiteral kL2 = "L2_cache_size_in_bytes";
constexpr llvm::StringLiteral kFeatures = "features";

} // namespace

void attn::attachCpuTarget(ModuleOp module, const CpuTargetDescription &t) {
  MLIRContext *context = module.getContext();
  context->getOrLoadDialect<DLTIDialect>();
  Builder b(context);
  SmallVector<DataLayoutEntryInterface> entries;
  auto add = [&](llvm::StringRef key, Attribute value) {
    entries.push_back(DataLayoutEntryAttr::get(b.getStringAttr(key), value));
  };
  add(kArch, b.getStringAttr(t.arch));
  add(kCpu, b.getStringAttr(t.cpu));
  add(kVectorBits, b.getI64IntegerAttr(t.vectorBits));
  add(kVectorRegisters, b.getI64IntegerAttr(t.vectorRegisters));
  add(kFma, b.getBoolAttr(t.fma));
  add(kFmaUnits, b.getI64IntegerAttr(t.fmaUnits));
  add(kCacheLine, b.getI64IntegerAttr(t.cacheLineBytes));
  add(kL1d, b.getI64IntegerAttr(t.l1dBytes));
  add(kL2, b.getI64IntegerAttr(t.l2BytesPerCore));
  add(kFeatures, b.getStringAttr(llvm::join(t.features, ",")));
  auto device = TargetDeviceSpecAttr::get(context, entries);
  DataLayoutEntryInterface system =
      DataLayoutEntryAttr::get(b.getStringAttr(kCpuDeviceId), device);
  module->setAttr(DLTIDialect::kTargetSystemDescAttrName,
                  TargetSystemSpecAttr::get(context, {system}));
}

FailureOr<CpuTargetDescription> attn::cpuTargetOf(Operation *op) {
  ModuleOp module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  CpuTargetDescription target;
  if (!module)
    return target;
  auto system = module->getAttrOfType<TargetSystemSpecAttr>(
      DLTIDialect::kTargetSystemDescAttrName);
  if (!system)
    return target;
  std::optional<TargetDeviceSpecInterface> device =
      system.getDeviceSpecForDeviceID(
          StringAttr::get(module.getContext(), kCpuDeviceId));
  if (!device)
    return target;
  for (DataLayoutEntryInterface entry : device->getEntries()) {
    auto key = dyn_cast<StringAttr>(entry.getKey());
    if (!key)
      continue;
    Attribute value = entry.getValue();
    auto integer = [&](int64_t &field, int64_t least) -> LogicalResult {
      auto attr = dyn_cast<IntegerAttr>(value);
      if (!attr || attr.getInt() < least)
        return module.emitError()
               << "the CPU target description's '" << key.getValue()
               << "' must be an integer >= " << least << ", got " << value;
      field = attr.getInt();
      return success();
    };
    auto string = [&](std::string &field) -> LogicalResult {
      auto attr = dyn_cast<StringAttr>(value);
      if (!attr)
        return module.emitError()
               << "the CPU target description's '" << key.getValue()
               << "' must be a string, got " << value;
      field = attr.getValue().str();
      return success();
    };
    LogicalResult ok = success();
    llvm::StringRef name = key.getValue();
    std::string features;
    if (name == kArch)
      ok = string(target.arch);
    else if (name == kCpu)
      ok = string(target.cpu);
    else if (name == kVectorBits)
      ok = integer(target.vectorBits, 32);
    else if (name == kVectorRegisters)
      ok = integer(target.vectorRegisters, 1);
    else if (name == kFmaUnits)
      ok = integer(target.fmaUnits, 0);
    else if (name == kCacheLine)
      ok = integer(target.cacheLineBytes, 4);
    else if (name == kL1d)
      ok = integer(target.l1dBytes, 1);
    else if (name == kL2)
      ok = integer(target.l2BytesPerCore, 1);
    else if (name == kFma) {
      auto attr = dyn_cast<BoolAttr>(value);
      if (!attr)
        return module.emitError()
               << "the CPU target description's 'fma' must be a bool, got "
               << value;
      target.fma = attr.getValue();
    } else if (name == kFeatures) {
      ok = string(features);
      target.features.clear(); // what the description lists, only
      for (llvm::StringRef f : llvm::split(features, ','))
        if (!f.empty())
          target.features.push_back(f.str());
      llvm::sort(target.features);
    }
    // Other keys are other tools' business.
    if (failed(ok))
      return failure();
  }
  // Bounds that no machine exceeds keep the derivation's arithmetic sane.
  if (target.vectorBits > 2048 || target.vectorRegisters > 256)
    return module.emitError()
           << "the CPU target description's vector registers ("
           << target.vectorRegisters << " x " << target.vectorBits
           << " bits) exceed 256 x 2048";
  if (target.vectorBits % 32 != 0)
    return module.emitError()
           << "the CPU target description's vector width (" << target.vectorBits
           << " bits) is not a whole number of f32 lanes";
  return target;
}

FailureOr<CpuSchedule> attn::cpuScheduleOf(Operation *op) {
  FailureOr<CpuTargetDescription> target = cpuTargetOf(op);
  if (failed(target))
    return failure();
  return deriveCpuSchedule(*target);
}
