//===- Dispatch.cpp - Objects that pick their code by the running CPU -----===//

#include "attnc/Codegen/Dispatch.h"

#include "attn/Target/KernelStatus.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/TargetParser/Host.h"

using namespace attnc;

namespace {

/// The CPUID words the selector reads, in CpuRequirements::words order.
enum Word : unsigned {
  kLeaf1Ecx,   // CPUID.1:ECX
  kLeaf1Edx,   // CPUID.1:EDX
  kLeaf7Ebx,   // CPUID.(7,0):EBX
  kLeaf7Ecx,   // CPUID.(7,0):ECX
  kLeaf7Edx,   // CPUID.(7,0):EDX
  kLeaf7s1Eax, // CPUID.(7,1):EAX
  kExt1Ecx,    // CPUID.80000001h:ECX
  kExt1Edx,    // CPUID.80000001h:EDX
  kLeafDs1Eax, // CPUID.(0Dh,1):EAX
  kExt8Ebx,    // CPUID.80000008h:EBX
  kLeaf14Ebx,  // CPUID.(14h,0):EBX
  kLeaf7s1Edx, // CPUID.(7,1):EDX
};

struct FeatureBit {
  Word word;
  unsigned bit;
};

/// LLVM's x86 feature names and where CPUID reports them (the Intel SDM
/// and AMD APM; LLVM's own Host.cpp reads the same bits).
const llvm::StringMap<FeatureBit> &featureBits() {
  static const llvm::StringMap<FeatureBit> map = {
      {"cx8", {kLeaf1Edx, 8}},
      {"cmov", {kLeaf1Edx, 15}},
      {"mmx", {kLeaf1Edx, 23}},
      {"fxsr", {kLeaf1Edx, 24}},
      {"sse", {kLeaf1Edx, 25}},
      {"sse2", {kLeaf1Edx, 26}},
      {"sse3", {kLeaf1Ecx, 0}},
      {"pclmul", {kLeaf1Ecx, 1}},
      {"ssse3", {kLeaf1Ecx, 9}},
      {"fma", {kLeaf1Ecx, 12}},
      {"cx16", {kLeaf1Ecx, 13}},
      {"sse4.1", {kLeaf1Ecx, 19}},
      {"sse4.2", {kLeaf1Ecx, 20}},
      {"crc32", {kLeaf1Ecx, 20}},
      {"movbe", {kLeaf1Ecx, 22}},
      {"popcnt", {kLeaf1Ecx, 23}},
      {"aes", {kLeaf1Ecx, 25}},
      {"xsave", {kLeaf1Ecx, 26}},
      {"avx", {kLeaf1Ecx, 28}},
      {"f16c", {kLeaf1Ecx, 29}},
      {"rdrnd", {kLeaf1Ecx, 30}},
      {"fsgsbase", {kLeaf7Ebx, 0}},
      {"sgx", {kLeaf7Ebx, 2}},
      {"bmi", {kLeaf7Ebx, 3}},
      {"avx2", {kLeaf7Ebx, 5}},
      {"bmi2", {kLeaf7Ebx, 8}},
      {"invpcid", {kLeaf7Ebx, 10}},
      {"rtm", {kLeaf7Ebx, 11}},
      {"avx512f", {kLeaf7Ebx, 16}},
      {"avx512dq", {kLeaf7Ebx, 17}},
      {"rdseed", {kLeaf7Ebx, 18}},
      {"adx", {kLeaf7Ebx, 19}},
      {"avx512ifma", {kLeaf7Ebx, 21}},
      {"clflushopt", {kLeaf7Ebx, 23}},
      {"clwb", {kLeaf7Ebx, 24}},
      {"avx512cd", {kLeaf7Ebx, 28}},
      {"sha", {kLeaf7Ebx, 29}},
      {"avx512bw", {kLeaf7Ebx, 30}},
      {"avx512vl", {kLeaf7Ebx, 31}},
      {"avx512vbmi", {kLeaf7Ecx, 1}},
      {"pku", {kLeaf7Ecx, 3}},
      {"waitpkg", {kLeaf7Ecx, 5}},
      {"avx512vbmi2", {kLeaf7Ecx, 6}},
      {"shstk", {kLeaf7Ecx, 7}},
      {"gfni", {kLeaf7Ecx, 8}},
      {"vaes", {kLeaf7Ecx, 9}},
      {"vpclmulqdq", {kLeaf7Ecx, 10}},
      {"avx512vnni", {kLeaf7Ecx, 11}},
      {"avx512bitalg", {kLeaf7Ecx, 12}},
      {"avx512vpopcntdq", {kLeaf7Ecx, 14}},
      {"rdpid", {kLeaf7Ecx, 22}},
      {"kl", {kLeaf7Ecx, 23}},
      {"cldemote", {kLeaf7Ecx, 25}},
      {"movdiri", {kLeaf7Ecx, 27}},
      {"movdir64b", {kLeaf7Ecx, 28}},
      {"enqcmd", {kLeaf7Ecx, 29}},
      {"uintr", {kLeaf7Edx, 5}},
      {"avx512vp2intersect", {kLeaf7Edx, 8}},
      {"serialize", {kLeaf7Edx, 14}},
      {"tsxldtrk", {kLeaf7Edx, 16}},
      {"pconfig", {kLeaf7Edx, 18}},
      {"amx-bf16", {kLeaf7Edx, 22}},
      {"avx512fp16", {kLeaf7Edx, 23}},
      {"amx-tile", {kLeaf7Edx, 24}},
      {"amx-int8", {kLeaf7Edx, 25}},
      {"raoint", {kLeaf7s1Eax, 3}},
      {"avxvnni", {kLeaf7s1Eax, 4}},
      {"avx512bf16", {kLeaf7s1Eax, 5}},
      {"cmpccxadd", {kLeaf7s1Eax, 7}},
      {"hreset", {kLeaf7s1Eax, 22}},
      {"avxifma", {kLeaf7s1Eax, 23}},
      {"avxvnniint8", {kLeaf7s1Edx, 4}},
      {"avxneconvert", {kLeaf7s1Edx, 5}},
      {"avxvnniint16", {kLeaf7s1Edx, 10}},
      {"prefetchi", {kLeaf7s1Edx, 14}},
      {"sahf", {kExt1Ecx, 0}},
      {"lzcnt", {kExt1Ecx, 5}},
      {"sse4a", {kExt1Ecx, 6}},
      {"prfchw", {kExt1Ecx, 8}},
      {"xop", {kExt1Ecx, 11}},
      {"lwp", {kExt1Ecx, 15}},
      {"fma4", {kExt1Ecx, 16}},
      {"tbm", {kExt1Ecx, 21}},
      {"mwaitx", {kExt1Ecx, 29}},
      {"64bit", {kExt1Edx, 29}},
      {"xsaveopt", {kLeafDs1Eax, 0}},
      {"xsavec", {kLeafDs1Eax, 1}},
      {"xsaves", {kLeafDs1Eax, 3}},
      {"clzero", {kExt8Ebx, 0}},
      {"rdpru", {kExt8Ebx, 4}},
      {"wbnoinvd", {kExt8Ebx, 9}},
      {"ptwrite", {kLeaf14Ebx, 4}}};
  return map;
}

/// XCR0 bits the OS sets when it saves the SSE and AVX (ymm) state, and the
/// AVX-512 state (opmask, upper zmm halves, zmm16-31).
constexpr uint32_t kXcr0Avx = 0x6;
constexpr uint32_t kXcr0Avx512 = 0xe6;
/// And AMX's tile configuration and data (Linux sets them where it supports
/// AMX; a process must still ask for the data with arch_prctl, which the
/// kernels that use tiles do).
constexpr uint32_t kXcr0Amx = 0x60000;

bool needsAvxState(llvm::StringRef feature) {
  return feature.starts_with("avx") || feature == "fma" || feature == "f16c" ||
         feature == "fma4" || feature == "xop" || feature == "vaes" ||
         feature == "vpclmulqdq";
}

} // namespace

bool attnc::isIntrinsicsOnlyFeature(llvm::StringRef feature) {
  static const llvm::StringSet<> set = {
      "mwaitx",   "rdpru",     "clzero",   "rdpid",    "rdrnd",    "rdseed",
      "sgx",      "ptwrite",   "invpcid",  "wbnoinvd", "waitpkg",  "pku",
      "xsave",    "xsaveopt",  "xsavec",   "xsaves",   "fsgsbase", "shstk",
      "uintr",    "serialize", "hreset",   "enqcmd",   "movdiri",  "movdir64b",
      "cldemote", "pconfig",   "tsxldtrk", "rtm",      "kl",       "widekl",
      "usermsr"};
  return set.contains(feature);
}

CpuRequirements attnc::cpuRequirements(const llvm::MCSubtargetInfo &subtarget,
                                       llvm::StringRef cpu) {
  CpuRequirements requirements;
  requirements.cpu = cpu.str();
  // ISA features are the ones the host query names (tuning flags are not;
  // every x86 machine's query names the same set) and the table's.
  llvm::StringMap<bool> isa = llvm::sys::getHostCPUFeatures();
  for (const llvm::SubtargetFeatureKV &kv :
       subtarget.getAllProcessorFeatures()) {
    llvm::StringRef feature = kv.Key;
    auto it = featureBits().find(feature);
    if ((!isa.count(feature) && it == featureBits().end()) ||
        !subtarget.checkFeatures(("+" + feature).str()))
      continue;
    if (it == featureBits().end() || isIntrinsicsOnlyFeature(feature)) {
      // Not checked at run time, so not usable by the variant (AVX10, APX,
      // SHA512, system instructions: attnc's code uses none of them).
      requirements.disabled.push_back(("-" + feature).str());
      continue;
    }
    requirements.words[it->second.word] |= uint32_t(1) << it->second.bit;
    if (needsAvxState(feature))
      requirements.xcr0 |=
          feature.starts_with("avx512") ? kXcr0Avx512 : kXcr0Avx;
    if (feature.starts_with("amx"))
      requirements.xcr0 |= kXcr0Amx;
  }
  return requirements;
}

std::vector<std::string> attnc::makeVariant(llvm::Module &variant,
                                            llvm::StringRef suffix,
                                            llvm::StringRef cpu,
                                            llvm::StringRef features) {
  std::vector<std::string> exported;
  for (llvm::Function &function : variant) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", cpu);
    function.addFnAttr("target-features", features);
    if (!function.hasExternalLinkage())
      continue;
    exported.push_back(function.getName().str());
    // External until addDispatchers: linking modules drops unreferenced
    // internal functions.
    function.setName(function.getName() + ".attnc." + suffix);
  }
  // Module-level internals (the block cache's globals and helpers) keep
  // their names; linking the variants renames the clashes.
  return exported;
}

namespace {

/// The selector and the dispatchers run before anything is known about the
/// machine: they are compiled for the x86-64 baseline whatever CPU the
/// object's TargetMachine is for (a function's attributes override it).
void compileForBaseline(llvm::Function &function) {
  function.addFnAttr("target-cpu", "x86-64");
  function.addFnAttr("target-features", "");
}

/// {eax, ebx, ecx, edx} = cpuid(leaf, subleaf).
llvm::Value *cpuid(llvm::IRBuilder<> &b, uint32_t leaf, uint32_t subleaf) {
  llvm::Type *i32 = b.getInt32Ty();
  auto *type = llvm::FunctionType::get(
      llvm::StructType::get(b.getContext(), {i32, i32, i32, i32}), {i32, i32},
      false);
  auto *asmCall = llvm::InlineAsm::get(
      type, "cpuid",
      "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}",
      /*hasSideEffects=*/true);
  return b.CreateCall(asmCall, {b.getInt32(leaf), b.getInt32(subleaf)});
}

/// The selector: the index of the first variant the machine can run, or -1;
/// computed once (a benign race: every thread computes the same value).
llvm::Function *addSelector(llvm::Module &module,
                            llvm::ArrayRef<CpuRequirements> variants) {
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *i32 = b.getInt32Ty();
  auto *cache = new llvm::GlobalVariable(module, i32, /*isConstant=*/false,
                                         llvm::GlobalValue::InternalLinkage,
                                         b.getInt32(-2), "__attnc_cpu_variant");
  auto *selector = llvm::Function::Create(llvm::FunctionType::get(i32, false),
                                          llvm::GlobalValue::InternalLinkage,
                                          "__attnc_select_cpu_variant", module);
  selector->addFnAttr(llvm::Attribute::NoInline);
  compileForBaseline(*selector);
  auto *entry = llvm::BasicBlock::Create(context, "entry", selector);
  auto *compute = llvm::BasicBlock::Create(context, "compute", selector);
  auto *withXcr0 = llvm::BasicBlock::Create(context, "xgetbv", selector);
  auto *decide = llvm::BasicBlock::Create(context, "decide", selector);

  b.SetInsertPoint(entry);
  llvm::LoadInst *cached = b.CreateAlignedLoad(i32, cache, llvm::Align(4));
  cached->setAtomic(llvm::AtomicOrdering::Monotonic);
  auto *done = llvm::BasicBlock::Create(context, "done", selector);
  b.CreateCondBr(b.CreateICmpNE(cached, b.getInt32(-2)), done, compute);
  llvm::IRBuilder<>(done).CreateRet(cached);

  b.SetInsertPoint(compute);
  auto field = [&](llvm::Value *regs, unsigned i) {
    return b.CreateExtractValue(regs, i);
  };
  llvm::Value *maxLeaf = field(cpuid(b, 0, 0), 0);
  llvm::Value *maxExt = field(cpuid(b, 0x80000000u, 0), 0);
  // A leaf above the maximum reports nothing meaningful: zero it.
  auto leafWord = [&](uint32_t leaf, uint32_t subleaf, unsigned reg) {
    llvm::Value *max = leaf >= 0x80000000u ? maxExt : maxLeaf;
    return b.CreateSelect(b.CreateICmpUGE(max, b.getInt32(leaf)),
                          field(cpuid(b, leaf, subleaf), reg), b.getInt32(0));
  };
  std::array<llvm::Value *, CpuRequirements::kWords> words;
  words[kLeaf1Ecx] = leafWord(1, 0, 2);
  words[kLeaf1Edx] = leafWord(1, 0, 3);
  words[kLeaf7Ebx] = leafWord(7, 0, 1);
  words[kLeaf7Ecx] = leafWord(7, 0, 2);
  words[kLeaf7Edx] = leafWord(7, 0, 3);
  // Subleaf 1 of leaf 7 exists when CPUID.(7,0):EAX >= 1 (some CPUs do not
  // report zeros for subleaves they lack).
  llvm::Value *leaf7Subleaves = leafWord(7, 0, 0);
  auto subleaf1 = [&](unsigned reg) {
    return b.CreateSelect(b.CreateICmpUGE(leaf7Subleaves, b.getInt32(1)),
                          leafWord(7, 1, reg), b.getInt32(0));
  };
  words[kLeaf7s1Eax] = subleaf1(0);
  words[kExt1Ecx] = leafWord(0x80000001u, 0, 2);
  words[kExt1Edx] = leafWord(0x80000001u, 0, 3);
  words[kLeafDs1Eax] = leafWord(0xd, 1, 0);
  words[kExt8Ebx] = leafWord(0x80000008u, 0, 1);
  words[kLeaf14Ebx] = leafWord(0x14, 0, 1);
  words[kLeaf7s1Edx] = subleaf1(3);
  // XGETBV is there only with OSXSAVE (CPUID.1:ECX bit 27).
  llvm::Value *osxsave = b.CreateICmpNE(
      b.CreateAnd(words[kLeaf1Ecx], b.getInt32(1u << 27)), b.getInt32(0));
  b.CreateCondBr(osxsave, withXcr0, decide);

  b.SetInsertPoint(withXcr0);
  auto *xgetbvType = llvm::FunctionType::get(
      llvm::StructType::get(context, {i32, i32}), {i32}, false);
  // xgetbv, spelled as bytes so that no assembler feature check applies.
  auto *xgetbv = llvm::InlineAsm::get(xgetbvType, ".byte 0x0f, 0x01, 0xd0",
                                      "={ax},={dx},{cx}", true);
  llvm::Value *xcr0Read =
      b.CreateExtractValue(b.CreateCall(xgetbv, {b.getInt32(0)}), 0);
  b.CreateBr(decide);

  b.SetInsertPoint(decide);
  llvm::PHINode *xcr0 = b.CreatePHI(i32, 2);
  xcr0->addIncoming(b.getInt32(0), compute);
  xcr0->addIncoming(xcr0Read, withXcr0);
  llvm::Value *selected = b.getInt32(-1);
  llvm::SmallVector<llvm::Value *> runnable(variants.size());
  for (int i = static_cast<int>(variants.size()) - 1; i >= 0; --i) {
    llvm::Value *ok = b.getTrue();
    for (unsigned w = 0; w < CpuRequirements::kWords; ++w) {
      uint32_t mask = variants[i].words[w];
      if (!mask)
        continue;
      ok = b.CreateAnd(
          ok, b.CreateICmpEQ(b.CreateAnd(words[w], mask), b.getInt32(mask)));
    }
    if (uint32_t mask = variants[i].xcr0)
      ok = b.CreateAnd(
          ok, b.CreateICmpEQ(b.CreateAnd(xcr0, mask), b.getInt32(mask)));
    runnable[i] = ok;
    selected = b.CreateSelect(ok, b.getInt32(i), selected);
  }
  // ATTNC_CPU_VARIANT=I picks variant I of the --mcpu list instead (to test
  // each path), still only when the machine can run it.
  llvm::Type *ptr = b.getPtrTy();
  llvm::FunctionCallee getenv = module.getOrInsertFunction(
      "getenv", llvm::FunctionType::get(ptr, {ptr}, false));
  llvm::Value *text =
      b.CreateCall(getenv, {b.CreateGlobalString("ATTNC_CPU_VARIANT")});
  auto *forced = llvm::BasicBlock::Create(context, "forced", selector);
  auto *store = llvm::BasicBlock::Create(context, "store", selector);
  llvm::BasicBlock *chosen = b.GetInsertBlock();
  b.CreateCondBr(b.CreateIsNull(text), store, forced);

  b.SetInsertPoint(forced);
  // Exactly one digit naming a variant of the list; anything else is
  // ignored (the automatic choice stands). The second byte is read only
  // past a non-terminator.
  llvm::Type *i8 = b.getInt8Ty();
  llvm::Value *first = b.CreateZExt(b.CreateLoad(i8, text), i32);
  llvm::Value *secondAt =
      b.CreateSelect(b.CreateICmpNE(first, b.getInt32(0)),
                     b.CreateConstInBoundsGEP1_64(i8, text, 1), text);
  llvm::Value *second = b.CreateZExt(b.CreateLoad(i8, secondAt), i32);
  llvm::Value *index = b.CreateSub(first, b.getInt32('0'));
  llvm::Value *valid =
      b.CreateAnd(b.CreateICmpEQ(second, b.getInt32(0)),
                  b.CreateICmpULT(index, b.getInt32(variants.size())));
  llvm::Value *pick = b.getInt32(-1);
  for (auto [i, ok] : llvm::enumerate(runnable))
    pick = b.CreateSelect(b.CreateAnd(ok, b.CreateICmpEQ(index, b.getInt32(i))),
                          b.getInt32(i), pick);
  pick = b.CreateSelect(valid, pick, selected);
  b.CreateBr(store);

  b.SetInsertPoint(store);
  llvm::PHINode *result = b.CreatePHI(i32, 2);
  result->addIncoming(selected, chosen);
  result->addIncoming(pick, forced);
  selected = result;
  llvm::StoreInst *cacheStore =
      b.CreateAlignedStore(selected, cache, llvm::Align(4));
  cacheStore->setAtomic(llvm::AtomicOrdering::Monotonic);
  b.CreateRet(selected);
  return selector;
}

} // namespace

void attnc::addDispatchers(llvm::Module &module,
                           llvm::ArrayRef<std::string> exported,
                           llvm::ArrayRef<std::string> suffixes,
                           llvm::ArrayRef<CpuRequirements> variants) {
  llvm::Function *selector = addSelector(module, variants);
  llvm::LLVMContext &context = module.getContext();
  for (const std::string &name : exported) {
    llvm::Function *first =
        module.getFunction(name + ".attnc." + suffixes.front());
    if (!first)
      continue;
    auto *dispatcher = llvm::Function::Create(
        first->getFunctionType(), llvm::GlobalValue::ExternalLinkage, name,
        module);
    compileForBaseline(*dispatcher);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", dispatcher));
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : dispatcher->args())
      args.push_back(&arg);
    auto *unsupported =
        llvm::BasicBlock::Create(context, "unsupported", dispatcher);
    llvm::SwitchInst *pick =
        b.CreateSwitch(b.CreateCall(selector), unsupported, suffixes.size());
    for (auto [i, suffix] : llvm::enumerate(suffixes)) {
      llvm::Function *variant = module.getFunction(name + ".attnc." + suffix);
      auto *call = llvm::BasicBlock::Create(context, suffix, dispatcher);
      pick->addCase(b.getInt32(i), call);
      llvm::IRBuilder<> cb(call);
      llvm::CallInst *result = cb.CreateCall(variant, args);
      if (dispatcher->getReturnType()->isVoidTy())
        cb.CreateRetVoid();
      else
        cb.CreateRet(result);
    }
    llvm::IRBuilder<> ub(unsupported);
    if (dispatcher->getReturnType()->isVoidTy())
      ub.CreateRetVoid();
    else
      ub.CreateRet(llvm::ConstantInt::getSigned(dispatcher->getReturnType(),
                                                ATTNC_STATUS_UNSUPPORTED_CPU));
  }
  // Only the dispatchers are exported.
  for (const std::string &name : exported)
    for (const std::string &suffix : suffixes)
      if (llvm::Function *variant =
              module.getFunction(name + ".attnc." + suffix))
        variant->setLinkage(llvm::GlobalValue::InternalLinkage);
}
