//===- Bf16AcrossBlocksTest.cpp - bf16 carried between blocks as bits -----===//
//
// LLVM's x86 back end rounds a bf16 value that lives in two blocks with a
// call of __truncsfbf2 on CPUs without AVX512-BF16, a symbol attnc's JIT and
// objects do not provide. Each case below makes such a call without
// carryBf16AcrossBlocksAsBits (checked first, so the case cannot pass by
// accident), and none with it.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/Bf16AcrossBlocks.h"
#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/LLVMTranslation.h"
#include "attnc/Codegen/TargetMachine.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

using namespace attnc;

namespace {

struct Case {
  const char *name;
  const char *ir;
};

// Each function loads from %p, may store to %q, and its bf16 value lives
// in more than one block.
const Case kCases[] = {
    {"phi_of_a_load_and_zero", R"(
define void @f(i1 %c, ptr %p, ptr %q) {
entry:
  br i1 %c, label %a, label %b
a:
  %v = load bfloat, ptr %p
  br label %b
b:
  %s = phi bfloat [ %v, %a ], [ 0xR0000, %entry ]
  store bfloat %s, ptr %q
  ret void
})"},
    {"scalar_used_in_another_block", R"(
define void @f(i1 %c, ptr %p, ptr %q) {
entry:
  %v = load bfloat, ptr %p
  br i1 %c, label %a, label %b
a:
  store bfloat %v, ptr %q
  br label %b
b:
  ret void
})"},
    {"vector_used_in_another_block", R"(
define void @f(i1 %c, ptr %p, ptr %q) {
entry:
  %v = load <8 x bfloat>, ptr %p
  br i1 %c, label %a, label %b
a:
  store <8 x bfloat> %v, ptr %q
  br label %b
b:
  ret void
})"},
    {"array_of_vectors_in_a_loop", R"(
define void @f(i64 %n, ptr %p, ptr %q) {
entry:
  %v = load [2 x <2 x bfloat>], ptr %p
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %acc = phi [2 x <2 x bfloat>] [ %v, %entry ], [ %w, %loop ]
  %x = extractvalue [2 x <2 x bfloat>] %acc, 1
  %w = insertvalue [2 x <2 x bfloat>] %acc, <2 x bfloat> %x, 0
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  store [2 x <2 x bfloat>] %w, ptr %q
  ret void
})"},
};

/// Whether `type` is bf16, or a vector, array or struct holding it.
bool holdsBf16Type(llvm::Type *type) {
  if (type->getScalarType()->isBFloatTy())
    return true;
  for (llvm::Type *element : type->subtypes())
    if (holdsBf16Type(element))
      return true;
  return false;
}

class Bf16AcrossBlocks : public ::testing::TestWithParam<Case> {
protected:
  std::unique_ptr<llvm::Module> parse(llvm::LLVMContext &context) {
    llvm::SMDiagnostic error;
    std::unique_ptr<llvm::Module> module =
        llvm::parseAssemblyString(GetParam().ir, error, context);
    if (!module) {
      std::string text;
      llvm::raw_string_ostream os(text);
      error.print("case", os);
      ADD_FAILURE() << text;
    }
    return module;
  }

  /// The assembly of `module` for an x86-64 CPU without AVX512-BF16.
  std::string assemblyOf(llvm::Module &module) {
    initializeTargets();
    TargetOptions target;
    target.triple = "x86_64-linux-gnu";
    target.cpu = "x86-64-v3";
    auto machine = createTargetMachine(target);
    if (!machine) {
      ADD_FAILURE() << llvm::toString(machine.takeError());
      return "";
    }
    module.setTargetTriple((*machine)->getTargetTriple());
    module.setDataLayout((*machine)->createDataLayout());
    llvm::SmallString<0> text;
    llvm::raw_svector_ostream os(text);
    if (llvm::Error error =
            emitMachineCode(module, **machine, MachineCodeKind::Assembly, os))
      ADD_FAILURE() << llvm::toString(std::move(error));
    return std::string(text);
  }
};

TEST_P(Bf16AcrossBlocks, CallsTheLibraryWithoutTheRewrite) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse(context);
  ASSERT_TRUE(module);
  EXPECT_NE(assemblyOf(*module).find("__truncsfbf2"), std::string::npos);
}

TEST_P(Bf16AcrossBlocks, NoLibraryCallAndValidIRWithIt) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse(context);
  ASSERT_TRUE(module);
  carryBf16AcrossBlocksAsBits(*module);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  ASSERT_FALSE(llvm::verifyModule(*module, &os)) << problems;
  for (llvm::Function &function : *module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block) {
        bool holdsBf16 = holdsBf16Type(instruction.getType());
        EXPECT_FALSE(holdsBf16 && llvm::isa<llvm::PHINode>(instruction));
        if (!holdsBf16)
          continue;
        for (llvm::User *user : instruction.users())
          EXPECT_EQ(llvm::cast<llvm::Instruction>(user)->getParent(), &block);
      }
  EXPECT_EQ(assemblyOf(*module).find("__truncsfbf2"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Cases, Bf16AcrossBlocks, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
