//===- KernelAbiTest.cpp - The kernel ABI's entries, layouts and names ----===//

#include "attn/Target/KernelAbi.h"
#include "attn/Target/ElementType.h"

#include "gtest/gtest.h"

using namespace mlir::attn;
using namespace mlir::attn::abi;

namespace {

using Role = ArgumentRole;
using Kind = Parameter::Kind;

/// `B0 P S B1` for buffers 0 and 1 around the packed params and a stream.
std::string layoutOf(Entry entry, llvm::ArrayRef<Role> roles) {
  std::string text;
  for (Parameter p : parametersOf(entry, roles)) {
    if (!text.empty())
      text += " ";
    text += p.kind == Kind::Buffer   ? "B" + std::to_string(p.buffer)
            : p.kind == Kind::Packed ? std::string("P")
                                     : std::string("S");
  }
  return text;
}

TEST(KernelAbiTest, ParameterLayouts) {
  Role roles[] = {Role::Input, Role::Param,  Role::Input,
                  Role::Param, Role::Output, Role::Output};
  EXPECT_EQ(layoutOf(Entry::Run, roles), "B0 B1 B2 B3 B4 B5");
  EXPECT_EQ(layoutOf(Entry::Prepare, roles), "B1 B3 P");
  EXPECT_EQ(layoutOf(Entry::Prepared, roles), "B0 B1 B2 B3 P B4 B5");
  EXPECT_EQ(layoutOf(Entry::Cuda, roles), "S B0 B1 B2 B3 B4 B5");
  EXPECT_EQ(layoutOf(Entry::CudaLastError, roles), "");
  // Without outputs `packed` comes last; without params Prepare takes it
  // alone.
  Role noOutputs[] = {Role::Input, Role::Param};
  EXPECT_EQ(layoutOf(Entry::Prepared, noOutputs), "B0 B1 P");
  Role noParams[] = {Role::Input, Role::Output};
  EXPECT_EQ(layoutOf(Entry::Prepare, noParams), "P");
  EXPECT_EQ(packedPosition(noParams), 1u);
  // A state is in its declaration place, before `packed`; Prepare never
  // takes it.
  Role withState[] = {Role::Input, Role::State, Role::Param, Role::Output};
  EXPECT_EQ(layoutOf(Entry::Prepare, withState), "B2 P");
  EXPECT_EQ(layoutOf(Entry::Prepared, withState), "B0 B1 B2 P B3");
}

TEST(KernelAbiTest, RolesAreNamedOnceAndWrittenWhereTheKernelWrites) {
  for (Role role : {Role::Input, Role::Param, Role::State, Role::Output})
    EXPECT_EQ(roleNamed(nameOf(role)), role) << nameOf(role).str();
  EXPECT_EQ(nameOf(Role::State), "state");
  EXPECT_EQ(roleNamed("States"), std::nullopt);
  EXPECT_FALSE(isWritten(Role::Input));
  EXPECT_FALSE(isWritten(Role::Param));
  EXPECT_TRUE(isWritten(Role::State));
  EXPECT_TRUE(isWritten(Role::Output));
}

TEST(KernelAbiTest, ExportedSymbols) {
  std::vector<std::string> cpu = {"k",          "attnc_packed_k",
                                  "k_prepare",  "attnc_packed_k_prepare",
                                  "k_prepared", "attnc_packed_k_prepared"};
  EXPECT_EQ(exportedSymbols("k", ObjectKind::Cpu), cpu);
  std::vector<std::string> gpu = {"k", "attnc_packed_k", "k_cuda",
                                  "attnc_packed_k_cuda", "k_cuda_last_error"};
  EXPECT_EQ(exportedSymbols("k", ObjectKind::Gpu), gpu);
  // The GPU object's internal host function is in the reserved namespace.
  EXPECT_EQ(deviceFunctionSymbol("k"), "__attnc_device_k");
}

TEST(KernelAbiTest, BufferNames) {
  // `output X` of an input X is X_out, skipping names taken.
  std::vector<std::string> names =
      bufferNames({"X", "X_out", "W"}, {"Y", "X", "W"});
  std::vector<std::string> expected = {"X", "X_out",     "W",
                                       "Y", "X_out_out", "W_out"};
  EXPECT_EQ(names, expected);
}

TEST(KernelAbiTest, ParameterNamesMoveAside) {
  EXPECT_EQ(packedParameterName({"X", "Y"}), "packed");
  EXPECT_EQ(packedParameterName({"PACKED"}), "packed_");
  EXPECT_EQ(packedParameterName({"packed", "Packed_"}), "packed__");
  EXPECT_EQ(streamParameterName({"stream", "stream_"}), "stream__");
  EXPECT_EQ(packedNumelMacro("d2l_mha", {"packed"}), "D2L_MHA_PACKED__NUMEL");
}

TEST(KernelAbiTest, HeaderNamesCoverEveryMacroAndEntry) {
  std::vector<HeaderName> names = headerNames("k", {"N"}, {"X", "Y"});
  auto has = [&](llvm::StringRef name) {
    return llvm::any_of(names,
                        [&](const HeaderName &n) { return n.name == name; });
  };
  for (const char *name :
       {"k", "k_prepare", "k_prepared", "k_cuda", "k_cuda_last_error",
        "ATTNC_KERNEL_K_H", "K_STATUS_UNSUPPORTED_CPU",
        "K_STATUS_NO_CUDA_DRIVER", "K_STATUS_WRONG_GPU", "K_STATUS_CUDA_ERROR",
        "K_PACKED_NUMEL", "K_N", "K_X_RANK", "K_X_SHAPE", "K_X_NUMEL",
        "K_Y_NUMEL"})
    EXPECT_TRUE(has(name)) << name;
}

TEST(KernelAbiTest, StatusesAreDistinct) {
  std::vector<int> values = {ATTNC_STATUS_OK, ATTNC_STATUS_HALIDE_ERROR};
  for (const StatusDescription &status : documentedStatuses())
    values.push_back(status.value);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end());
}

TEST(KernelAbiTest, ReservedSymbols) {
  EXPECT_NE(reservedSymbolConflict("dlerror"), "");
  EXPECT_NE(reservedSymbolConflict("mgpuMemAlloc"), "");
  EXPECT_NE(reservedSymbolConflict("attnc_set_num_threads"), "");
  EXPECT_NE(reservedSymbolConflict("halide_error"), "");
  EXPECT_EQ(reservedSymbolConflict("d2l_mha"), "");
}

TEST(ElementTypeTest, TableRows) {
  for (const ElementTypeInfo &info : elementTypes()) {
    EXPECT_EQ(&describe(info.type), &info);
    EXPECT_EQ(elementTypeNamed(info.name), info.type);
  }
  EXPECT_EQ(bytesOf(ElementType::F32), 4u);
  EXPECT_EQ(bytesOf(ElementType::BF16), 2u);
  EXPECT_EQ(describe(ElementType::BF16).cType, "attnc_bf16");
  EXPECT_FALSE(isFloat(ElementType::I32));
  EXPECT_FALSE(elementTypeNamed("f64"));
}

} // namespace
