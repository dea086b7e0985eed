//===- SpecToModuleTest.cpp - The one way from spec text to a module ------===//

#include "attnc/Gen/SpecToModule.h"
#include "attnc/InitAttn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace attnc;

namespace {

constexpr const char *kTwoBlocks = "block first {\n"
                                   "  input X: f32[2, 4]\n"
                                   "  Y = relu(X)\n"
                                   "  output Y\n"
                                   "}\n"
                                   "block second {\n"
                                   "  input X: f32[2, 4]\n"
                                   "  Y = gelu(X)\n"
                                   "  output Y\n"
                                   "}\n";

class SpecToModuleTest : public ::testing::Test {
protected:
  SpecToModuleTest() {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
  }

  /// The public functions of `module`.
  static std::vector<std::string> kernels(mlir::ModuleOp module) {
    std::vector<std::string> names;
    for (auto func : module.getOps<mlir::func::FuncOp>())
      if (func.isPublic())
        names.push_back(func.getName().str());
    return names;
  }

  mlir::MLIRContext context;
  std::string diagnostics;
  llvm::raw_string_ostream os{diagnostics};
};

TEST_F(SpecToModuleTest, ChecksOnceThenGeneratesEachBlock) {
  llvm::Expected<CheckedSpec> spec =
      CheckedSpec::check(context, kTwoBlocks, "two.attn", os);
  ASSERT_TRUE(static_cast<bool>(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->blockNames().size(), 2u);
  EXPECT_EQ(spec->text(), kTwoBlocks);
  auto second = spec->generate("second");
  ASSERT_TRUE(static_cast<bool>(second)) << llvm::toString(second.takeError());
  EXPECT_EQ(kernels(**second), std::vector<std::string>{"second"});
  auto all = spec->generate("");
  ASSERT_TRUE(static_cast<bool>(all)) << llvm::toString(all.takeError());
  EXPECT_EQ(kernels(**all), (std::vector<std::string>{"first", "second"}));
}

TEST_F(SpecToModuleTest, ABlockIsChosenByNameOrIsTheOnlyOne) {
  llvm::Expected<CheckedSpec> spec =
      CheckedSpec::check(context, kTwoBlocks, "two.attn", os);
  ASSERT_TRUE(static_cast<bool>(spec));
  EXPECT_EQ(llvm::toString(spec->selectBlock("").takeError()),
            "'two.attn' has 2 blocks; choose one (first, second)");
  EXPECT_EQ(llvm::toString(spec->selectBlock("third").takeError()),
            "no block named 'third' in 'two.attn'; available blocks: first, "
            "second");
  llvm::Expected<std::string> first = spec->selectBlock("first");
  ASSERT_TRUE(static_cast<bool>(first));
  EXPECT_EQ(*first, "first");
}

TEST_F(SpecToModuleTest, ASpecWithErrorsSaysHowManyAfterItsDiagnostics) {
  llvm::Expected<CheckedSpec> spec = CheckedSpec::check(
      context, "block b {\n  input X: f32[2]\n  output Z\n}\n", "bad.attn", os);
  ASSERT_FALSE(static_cast<bool>(spec));
  bool frontEnd = false;
  llvm::handleAllErrors(spec.takeError(), [&](const FrontEndErrors &errors) {
    frontEnd = true;
    // One per error printed.
    size_t printed = 0;
    for (size_t at = diagnostics.find("error:"); at != std::string::npos;
         at = diagnostics.find("error:", at + 1))
      ++printed;
    EXPECT_EQ(errors.message(),
              "'bad.attn' has " + std::to_string(printed) +
                  (printed == 1 ? " error" : " errors"));
  });
  EXPECT_TRUE(frontEnd);
  EXPECT_NE(diagnostics.find("bad.attn:3:"), std::string::npos) << diagnostics;
}

TEST_F(SpecToModuleTest, AttnIRIsReadByItsExtensionAndGeneratedOnce) {
  const char *ir =
      "func.func @k(%x: tensor<2x4xf32> {attn.name = \"X\", attn.role = "
      "\"input\"}) -> (tensor<2x4xf32> {attn.name = \"Y\"}) {\n"
      "  %y = attn.relu %x : tensor<2x4xf32>\n"
      "  return %y : tensor<2x4xf32>\n"
      "}\n";
  llvm::Expected<CheckedSpec> spec =
      CheckedSpec::check(context, ir, "k.mlir", os);
  ASSERT_TRUE(static_cast<bool>(spec))
      << llvm::toString(spec.takeError()) << diagnostics;
  EXPECT_EQ(spec->blockNames().size(), 1u);
  auto module = spec->generate("k");
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  EXPECT_EQ(kernels(**module), std::vector<std::string>{"k"});
  auto again = spec->generate("k");
  EXPECT_FALSE(static_cast<bool>(again));
  llvm::consumeError(again.takeError());
}

TEST_F(SpecToModuleTest, SpecToModuleIsTheStepsInOneCall) {
  auto module = specToModule(context, kTwoBlocks, "two.attn", "", os);
  ASSERT_FALSE(static_cast<bool>(module));
  EXPECT_EQ(llvm::toString(module.takeError()),
            "'two.attn' has 2 blocks; choose one (first, second)");
  auto all = specToModule(context, kTwoBlocks, "two.attn", "", os,
                          /*allBlocks=*/true);
  ASSERT_TRUE(static_cast<bool>(all));
  EXPECT_EQ(kernels(**all).size(), 2u);
}

} // namespace
