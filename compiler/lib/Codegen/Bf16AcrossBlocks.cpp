//===- Bf16AcrossBlocks.cpp - bf16 values carried between blocks as bits --===//

#include "attnc/Codegen/Bf16AcrossBlocks.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

using namespace llvm;

/// `type` with each bf16 replaced by i16; null when it holds no bf16.
static Type *bitsTypeOf(Type *type) {
  if (type->isBFloatTy())
    return Type::getInt16Ty(type->getContext());
  if (auto *vector = dyn_cast<VectorType>(type)) {
    if (!vector->getElementType()->isBFloatTy())
      return nullptr;
    return VectorType::get(Type::getInt16Ty(type->getContext()),
                           vector->getElementCount());
  }
  if (auto *array = dyn_cast<ArrayType>(type)) {
    Type *element = bitsTypeOf(array->getElementType());
    return element ? ArrayType::get(element, array->getNumElements()) : nullptr;
  }
  if (auto *structure = dyn_cast<StructType>(type)) {
    SmallVector<Type *> fields;
    bool any = false;
    for (Type *field : structure->elements()) {
      Type *bits = bitsTypeOf(field);
      any |= bits != nullptr;
      fields.push_back(bits ? bits : field);
    }
    return any ? StructType::get(type->getContext(), fields,
                                 structure->isPacked())
               : nullptr;
  }
  return nullptr;
}

/// `value` as type `to`, where one of the two is the other's bitsTypeOf:
/// a bitcast, or one per element of an aggregate.
static Value *convert(IRBuilder<> &builder, Value *value, Type *to) {
  Type *from = value->getType();
  if (from == to)
    return value;
  if (!from->isAggregateType())
    return builder.CreateBitCast(value, to);
  Value *result = PoisonValue::get(to);
  unsigned count = isa<ArrayType>(from) ? from->getArrayNumElements()
                                        : from->getStructNumElements();
  for (unsigned i = 0; i < count; ++i) {
    Type *element = isa<ArrayType>(to) ? to->getArrayElementType()
                                       : to->getStructElementType(i);
    result = builder.CreateInsertValue(
        result, convert(builder, builder.CreateExtractValue(value, i), element),
        i);
  }
  return result;
}

/// Each phi of a bf16 type as a phi of its bits: each incoming value
/// converted at the end of its block, the phi's value converted back after
/// the block's phis.
static void rewritePhis(Function &function) {
  SmallVector<PHINode *> phis;
  for (BasicBlock &block : function)
    for (PHINode &phi : block.phis())
      if (bitsTypeOf(phi.getType()))
        phis.push_back(&phi);
  for (PHINode *phi : phis) {
    Type *bits = bitsTypeOf(phi->getType());
    PHINode *carried =
        PHINode::Create(bits, phi->getNumIncomingValues(),
                        phi->getName() + ".bits", phi->getIterator());
    for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
      BasicBlock *from = phi->getIncomingBlock(i);
      IRBuilder<> builder(from->getTerminator());
      carried->addIncoming(convert(builder, phi->getIncomingValue(i), bits),
                           from);
    }
    IRBuilder<> builder(phi->getParent(),
                        phi->getParent()->getFirstInsertionPt());
    phi->replaceAllUsesWith(convert(builder, carried, phi->getType()));
    phi->eraseFromParent();
  }
}

/// Each use of a bf16-typed instruction outside its block reads its bits,
/// converted after the definition, converted back before the user.
static void rewriteUsesAcrossBlocks(Function &function) {
  SmallVector<Instruction *> values;
  for (BasicBlock &block : function)
    for (Instruction &instruction : block)
      if (bitsTypeOf(instruction.getType()))
        values.push_back(&instruction);
  for (Instruction *value : values) {
    SmallVector<Use *> across;
    for (Use &use : value->uses())
      if (cast<Instruction>(use.getUser())->getParent() != value->getParent())
        across.push_back(&use);
    if (across.empty())
      continue;
    // bf16 phis are gone (rewritePhis), so the definition is an ordinary
    // instruction, not a terminator (no invokes in attnc's code).
    IRBuilder<> after(value->getParent(), ++value->getIterator());
    Value *bits = convert(after, value, bitsTypeOf(value->getType()));
    for (Use *use : across) {
      IRBuilder<> before(cast<Instruction>(use->getUser()));
      use->set(convert(before, bits, value->getType()));
    }
  }
}

void attnc::carryBf16AcrossBlocksAsBits(Function &function) {
  if (function.isDeclaration())
    return;
  rewritePhis(function);
  rewriteUsesAcrossBlocks(function);
}

void attnc::carryBf16AcrossBlocksAsBits(Module &module) {
  for (Function &function : module)
    carryBf16AcrossBlocksAsBits(function);
}
