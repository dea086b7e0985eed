//===- MLIRGen.cpp - attn-dialect IR from a checked .attn AST -------------===//

#include "attnc/Gen/MLIRGen.h"

#include "attnc/Sema/OpTable.h"

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnTypes.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/SourceMgr.h"

using namespace attnc;
using namespace attnc::ast;
namespace attn = mlir::attn;
namespace rules = mlir::attn::rules;

namespace {

class MLIRGenImpl {
public:
  MLIRGenImpl(mlir::MLIRContext &context, const llvm::SourceMgr &sourceMgr)
      : builder(&context), sourceMgr(sourceMgr) {
    unsigned mainId = sourceMgr.getMainFileID();
    filename = sourceMgr.getMemoryBuffer(mainId)->getBufferIdentifier();
  }

  mlir::OwningOpRef<mlir::ModuleOp> generate(const Module &module,
                                             llvm::StringRef onlyBlock) {
    mlir::OwningOpRef<mlir::ModuleOp> result =
        mlir::ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(result->getBody());
    // The blocks asked for (every block, or `onlyBlock`) are the kernels;
    // the blocks they call come before them, as private functions when not
    // asked for themselves. Depth first, iteratively (a chain of calls may
    // be long), each block once, in file order otherwise.
    llvm::SmallPtrSet<const Block *, 8> exported, emitted;
    for (const auto &block : module.blocks)
      if (onlyBlock.empty() || block->name.name == onlyBlock)
        exported.insert(block.get());
    for (const auto &root : module.blocks) {
      if (!exported.contains(root.get()) || !emitted.insert(root.get()).second)
        continue;
      llvm::SmallVector<std::pair<const Block *, size_t>> stack{
          {root.get(), 0}};
      while (!stack.empty()) {
        auto &[block, next] = stack.back();
        if (next < block->callees.size()) {
          const Block *callee = block->callees[next++];
          if (emitted.insert(callee).second)
            stack.push_back({callee, 0});
          continue;
        }
        generateBlock(*block, exported.contains(block));
        stack.pop_back();
      }
    }
    return result;
  }

private:
  mlir::Location loc(llvm::SMLoc where) {
    auto [line, column] = sourceMgr.getLineAndColumn(where);
    return mlir::FileLineColLoc::get(builder.getStringAttr(filename), line,
                                     column);
  }

  mlir::RankedTensorType tensorType(const rules::TensorShape &shape) {
    // Sema checked the types: every shape has a row of the table.
    return mlir::RankedTensorType::get(
        shape.dims,
        mlir::attn::mlirTypeOf(*shape.element, builder.getContext()));
  }

  void generateBlock(const Block &block, bool exported) {
    values.clear();
    stateUpdates.clear();
    llvm::SmallVector<const DeclStmt *> args;
    llvm::SmallVector<mlir::Type> argTypes, resultTypes;
    for (const auto &stmt : block.stmts)
      if (auto *decl = llvm::dyn_cast<DeclStmt>(stmt.get())) {
        args.push_back(decl);
        argTypes.push_back(tensorType(*decl->shape));
      }

    auto func = mlir::func::FuncOp::create(
        builder, loc(block.name.range.Start), block.name.name,
        builder.getFunctionType(argTypes, {}));
    // A block only called by the kernels is not exported itself.
    if (!exported)
      func.setPrivate();
    mlir::Block *entry = func.addEntryBlock();
    for (auto [decl, arg] : llvm::zip(args, entry->getArguments())) {
      arg.setLoc(loc(decl->name.range.Start));
      values[decl->name.name] = arg;
    }

    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(entry);
    for (const auto &stmt : block.stmts)
      if (auto *assign = llvm::dyn_cast<AssignStmt>(stmt.get()))
        generateAssign(*assign);

    llvm::SmallVector<mlir::Value> results;
    for (const Ident *output : block.outputs) {
      results.push_back(values.lookup(output->name));
      resultTypes.push_back(results.back().getType());
    }
    // The new values of the states the block updates, after its outputs
    // (annotateKernel ties each to its argument).
    for (const StateUpdate &update : stateUpdates) {
      results.push_back(update.value);
      resultTypes.push_back(update.value.getType());
    }
    // The return stands for the block's `output` statement(s).
    llvm::SMLoc returnLoc = block.outputs.empty()
                                ? block.range.End
                                : block.outputs.front()->range.Start;
    mlir::func::ReturnOp::create(builder, loc(returnLoc), results);
    func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
    annotateKernel(func, block, args);
  }

  /// Records what the C header and the runtime need: DSL names, input or
  /// param, and the block's dims in order (see AttnDialect.td).
  void annotateKernel(mlir::func::FuncOp func, const Block &block,
                      llvm::ArrayRef<const DeclStmt *> args) {
    using mlir::attn::AttnDialect;
    // Every argument's and result's attributes set at once: one setArgAttr
    // per argument rebuilds the whole attribute array each time (quadratic
    // in the number of arguments).
    llvm::SmallVector<mlir::DictionaryAttr> argAttrs;
    for (const DeclStmt *decl : args) {
      mlir::NamedAttribute attrs[] = {
          builder.getNamedAttr(AttnDialect::kNameAttr,
                               builder.getStringAttr(decl->name.name)),
          builder.getNamedAttr(
              AttnDialect::kRoleAttr,
              builder.getStringAttr(mlir::attn::abi::nameOf(decl->role)))};
      argAttrs.push_back(builder.getDictionaryAttr(attrs));
    }
    func.setAllArgAttrs(argAttrs);
    // An output that is an input or param is a buffer of its own (the ABI
    // names it).
    std::vector<std::string> argNames, outputNames;
    for (const DeclStmt *decl : args)
      argNames.push_back(decl->name.name);
    for (const Ident *output : block.outputs)
      outputNames.push_back(output->name);
    std::vector<std::string> bufferNames =
        mlir::attn::abi::bufferNames(argNames, outputNames);
    llvm::SmallVector<mlir::DictionaryAttr> resultAttrs;
    for (size_t i = 0; i < outputNames.size(); ++i)
      resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
          AttnDialect::kNameAttr,
          builder.getStringAttr(bufferNames[argNames.size() + i]))));
    for (const StateUpdate &update : stateUpdates) {
      auto at = llvm::find_if(args, [&](const DeclStmt *decl) {
        return decl->name.name == update.state;
      });
      mlir::NamedAttribute attrs[] = {
          builder.getNamedAttr(AttnDialect::kNameAttr,
                               builder.getStringAttr(update.state)),
          builder.getNamedAttr(
              AttnDialect::kUpdatesAttr,
              builder.getI64IntegerAttr(std::distance(args.begin(), at)))};
      resultAttrs.push_back(builder.getDictionaryAttr(attrs));
    }
    func.setAllResultAttrs(resultAttrs);
    llvm::SmallVector<mlir::Attribute> dimNames;
    llvm::SmallVector<int64_t> dimValues;
    for (const auto &stmt : block.stmts)
      if (auto *dims = llvm::dyn_cast<DimStmt>(stmt.get()))
        for (const DimStmt::Def &def : dims->defs) {
          dimNames.push_back(builder.getStringAttr(def.name.name));
          dimValues.push_back(def.value);
        }
    func->setAttr(AttnDialect::kDimNamesAttr, builder.getArrayAttr(dimNames));
    func->setAttr(AttnDialect::kDimValuesAttr,
                  builder.getDenseI64ArrayAttr(dimValues));
  }

  /// Binds each name of `assign` to the matching result (Sema checked that
  /// there is one per name).
  void generateAssign(const AssignStmt &assign) {
    auto *call = llvm::dyn_cast<CallExpr>(assign.value.get());
    if (!call) {
      values[assign.names.front().name] = generateExpr(*assign.value);
      return;
    }
    mlir::Operation *op = generateCall(*call);
    for (auto [name, result] : llvm::zip_equal(
             assign.names, op->getResults().take_front(call->results.size())))
      values[name.name] = result;
  }

  mlir::Value generateExpr(const Expr &expr) {
    if (auto *name = llvm::dyn_cast<NameExpr>(&expr))
      return values.lookup(name->name);
    if (auto *call = llvm::dyn_cast<CallExpr>(&expr))
      return generateCall(*call)->getResult(0);
    llvm::report_fatal_error("attnc: MLIRGen reached a non-tensor expression");
  }

  /// The op of one call, and the states it updates (a multihead_attention
  /// with a cache: its last two results are cache_k's and cache_v's new
  /// values, which later reads of those names never see: Sema allows none).
  mlir::Operation *generateCall(const CallExpr &call) {
    mlir::Operation *op = createOp(call);
    if (auto mha = llvm::dyn_cast<attn::MultiheadAttentionOp>(op))
      if (mha.hasCache()) {
        auto stateName = [&](llvm::StringRef param) {
          return llvm::cast<NameExpr>(call.get(param).tensor)->name;
        };
        stateUpdates.push_back({stateName("cache_k"), mha.getUpdatedCacheK()});
        stateUpdates.push_back({stateName("cache_v"), mha.getUpdatedCacheV()});
      }
    return op;
  }

  /// The op of one call; nested calls become values first, in argument
  /// order.
  mlir::Operation *createOp(const CallExpr &call) {
    if (call.block)
      return generateBlockCall(call);
    const OpInfo &op = *call.op;
    llvm::SmallVector<mlir::Value, 8> operands(op.params.size());
    for (auto [operand, bound] : llvm::zip_equal(operands, call.bound))
      if (bound.tensor)
        operand = generateExpr(*bound.tensor);

    mlir::Location location = loc(call.callee.range.Start);
    mlir::OpBuilder &b = builder;
    auto operand = [&](llvm::StringRef name) {
      return operands[*op.indexOf(name)];
    };
    auto i64 = [&](llvm::StringRef name) {
      return b.getI64IntegerAttr(call.get(name).intValue);
    };
    auto f32 = [&](llvm::StringRef name) {
      return b.getF32FloatAttr(static_cast<float>(call.get(name).floatValue));
    };
    auto unit = [&](llvm::StringRef name) {
      return call.get(name).boolValue ? b.getUnitAttr() : mlir::UnitAttr();
    };
    auto dtype = [&](llvm::StringRef name) {
      return mlir::TypeAttr::get(attn::mlirTypeOf(
          static_cast<attn::ElementType>(call.get(name).intValue),
          b.getContext()));
    };

    // Each op's ODS builder takes the parameters in AttnOps.def's order.
    switch (op.kind) {
#define ATTN_TENSOR(name, Getter) , operand(#name)
#define ATTN_OPTIONAL_TENSOR(name, Getter) , operand(#name)
#define ATTN_KEYWORD_TENSOR(name, Getter) , operand(#name)
#define ATTN_POSITIONAL_FLOAT(name, Getter) , f32(#name)
#define ATTN_INT(name, Getter) , i64(#name)
#define ATTN_INT_DEFAULT(name, Getter, value) , i64(#name)
#define ATTN_FLOAT(name, Getter) , f32(#name)
#define ATTN_FLOAT_DEFAULT(name, Getter, value) , f32(#name)
#define ATTN_FLAG(name, Getter) , unit(#name)
#define ATTN_DTYPE(name, Getter) , dtype(#name)
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  case OpKind::Kind:                                                           \
    return attn::Class::create(b, location PARAMS);
#include "attn/IR/AttnOps.def"
    }
    llvm::report_fatal_error("attnc: MLIRGen reached an unknown op");
  }

  /// A call of another block: func.call of its function, with the callee's
  /// inputs and params in declaration order.
  mlir::Operation *generateBlockCall(const CallExpr &call) {
    llvm::SmallVector<mlir::Value, 8> operands;
    for (const BoundArgument &bound : call.bound)
      operands.push_back(generateExpr(*bound.tensor));
    llvm::SmallVector<mlir::Type, 2> results;
    for (const rules::TensorShape &shape : call.results)
      results.push_back(tensorType(shape));
    return mlir::func::CallOp::create(builder, loc(call.callee.range.Start),
                                      call.block->name.name, results, operands);
  }

  mlir::OpBuilder builder;
  const llvm::SourceMgr &sourceMgr;
  llvm::StringRef filename;
  /// The SSA value of each named tensor of the block being generated.
  llvm::StringMap<mlir::Value> values;
  /// The states the block updates, in the order of the calls that do.
  struct StateUpdate {
    std::string state;
    mlir::Value value;
  };
  llvm::SmallVector<StateUpdate> stateUpdates;
};

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
attnc::mlirGen(mlir::MLIRContext &context, const Module &module,
               const llvm::SourceMgr &sourceMgr, llvm::StringRef onlyBlock) {
  context.getOrLoadDialect<attn::AttnDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  return MLIRGenImpl(context, sourceMgr).generate(module, onlyBlock);
}
