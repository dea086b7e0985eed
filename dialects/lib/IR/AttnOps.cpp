//===- AttnOps.cpp - Operations of the attn dialect -----------------------===//
//
// Every op's verifier and result-type inference call the same rule function
// of AttnShapeRules.h; this file only converts between MLIR types and the
// rules' TensorShape.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnShapeRules.h"
#include "attn/IR/AttnTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::attn;
using rules::RuleError;
using rules::RuleResult;
using rules::RuleValue;
using rules::TensorShape;

//===----------------------------------------------------------------------===//
// Conversions between MLIR types and rule shapes
//===----------------------------------------------------------------------===//

namespace {

/// Reads operand types as rule shapes. A type that is not a statically
/// shaped tensor (possible while parsing, before the ODS type constraints
/// ran) is reported and makes `failed()` true.
class OperandShapes {
public:
  explicit OperandShapes(RuleError error) : error(error) {}

  TensorShape get(StringRef name, Value value) {
    auto type =
        dyn_cast_or_null<RankedTensorType>(value ? value.getType() : Type());
    if (!type || !type.hasStaticShape()) {
      std::string text = "<missing>";
      if (value)
        llvm::raw_string_ostream(text) << value.getType();
      error(name,
            "'" + name + "' must be a statically shaped tensor, got " + text);
      anyFailed = true;
      return {};
    }
    TensorShape shape;
    shape.dims.assign(type.getShape().begin(), type.getShape().end());
    shape.element = elementTypeOf(type.getElementType());
    return shape;
  }

  std::optional<TensorShape> getOptional(StringRef name, Value value) {
    if (!value)
      return std::nullopt;
    return get(name, value);
  }

  bool failed() const { return anyFailed; }

private:
  RuleError error;
  bool anyFailed = false;
};

/// The type of a result the rules inferred (from operands the rules
/// accepted, so its element type has a row of the table).
Type toType(MLIRContext *context, const TensorShape &shape) {
  return RankedTensorType::get(shape.dims, mlirTypeOf(*shape.element, context));
}

const TensorShape *shapeOrNull(const std::optional<TensorShape> &shape) {
  return shape ? &*shape : nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// Per-op rule application (AttnOps.def)
//===----------------------------------------------------------------------===//

namespace {

/// Reads an op's operands and attributes as rule arguments. What is missing
/// or not a static tensor (possible while parsing, before the ODS
/// constraints ran) is reported and makes `failed()` true.
class ArgumentReader {
public:
  explicit ArgumentReader(RuleError error) : error(error), shapes(error) {}

  RuleValue tensor(StringRef name, Value value) {
    RuleValue v;
    v.tensor = shapes.get(name, value);
    return v;
  }
  RuleValue optionalTensor(StringRef name, Value value) {
    RuleValue v;
    v.tensor = shapes.getOptional(name, value);
    return v;
  }
  /// A required attribute when `defaultValue` is not given.
  RuleValue integer(StringRef name, IntegerAttr attr,
                    std::optional<int64_t> defaultValue = std::nullopt) {
    RuleValue v;
    if (attr)
      v.integer = attr.getValue().getSExtValue();
    else if (defaultValue) // omitted, still unset while parsing
      v.integer = *defaultValue;
    else
      missing(name);
    return v;
  }
  RuleValue number(StringRef name, FloatAttr attr,
                   std::optional<double> defaultValue = std::nullopt) {
    RuleValue v;
    if (attr)
      v.number = attr.getValueAsDouble();
    else if (defaultValue)
      v.number = *defaultValue;
    else
      missing(name);
    return v;
  }
  static RuleValue flag(bool value) {
    RuleValue v;
    v.flag = value;
    return v;
  }
  /// A dtype attribute as its ElementType (in `integer`, as the rules take
  /// it); a type without a row in the table is reported.
  RuleValue dtype(StringRef name, TypeAttr attr) {
    RuleValue v;
    if (!attr) {
      missing(name);
      return v;
    }
    std::optional<ElementType> element = elementTypeOf(attr.getValue());
    if (!element) {
      std::string text;
      llvm::raw_string_ostream(text) << attr.getValue();
      error(name, "dtype=" + text + " is not an element type of kernels");
      anyMissing = true;
      return v;
    }
    v.integer = static_cast<int64_t>(*element);
    return v;
  }

  bool failed() const { return anyMissing || shapes.failed(); }

private:
  void missing(StringRef name) {
    error(name, "requires the attribute '" + name + "'");
    anyMissing = true;
  }

  RuleError error;
  OperandShapes shapes;
  bool anyMissing = false;
};

} // namespace

#define ATTN_TENSOR(name, Getter)                                              \
  args.push_back(r.tensor(#name, a.get##Getter()));
#define ATTN_OPTIONAL_TENSOR(name, Getter)                                     \
  args.push_back(r.optionalTensor(#name, a.get##Getter()));
#define ATTN_KEYWORD_TENSOR(name, Getter) ATTN_OPTIONAL_TENSOR(name, Getter)
#define ATTN_INT(name, Getter)                                                 \
  args.push_back(r.integer(#name, a.get##Getter##Attr()));
#define ATTN_INT_DEFAULT(name, Getter, value)                                  \
  args.push_back(r.integer(#name, a.get##Getter##Attr(), value));
#define ATTN_FLOAT(name, Getter)                                               \
  args.push_back(r.number(#name, a.get##Getter##Attr()));
#define ATTN_POSITIONAL_FLOAT(name, Getter) ATTN_FLOAT(name, Getter)
#define ATTN_FLOAT_DEFAULT(name, Getter, value)                                \
  args.push_back(r.number(#name, a.get##Getter##Attr(), value));
#define ATTN_FLAG(name, Getter)                                                \
  args.push_back(ArgumentReader::flag(a.get##Getter()));
#define ATTN_DTYPE(name, Getter)                                               \
  args.push_back(r.dtype(#name, a.get##Getter##Attr()));
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  static RuleResult applyRules(Class::Adaptor a, RuleError error) {            \
    ArgumentReader r(error);                                                   \
    SmallVector<rules::RuleValue, 8> args;                                     \
    PARAMS                                                                     \
    if (r.failed())                                                            \
      return std::nullopt;                                                     \
    return rules::applyRule(rules::OpKind::Kind, args, error);                 \
  }
#include "attn/IR/AttnOps.def"

//===----------------------------------------------------------------------===//
// Results after the first: the attention weights of return_weights
//===----------------------------------------------------------------------===//

/// Most ops have one result. Called only once applyRules accepted the
/// operands.
template <typename AdaptorT>
static void addMoreResults(MLIRContext *, AdaptorT, SmallVectorImpl<Type> &) {}

static TensorShape acceptedShape(StringRef name, Value value) {
  return OperandShapes([](StringRef, const Twine &) {}).get(name, value);
}

static void addMoreResults(MLIRContext *context, AttentionOp::Adaptor a,
                           SmallVectorImpl<Type> &resultTypes) {
  if (a.getReturnWeights())
    resultTypes.push_back(toType(
        context, rules::attentionWeightsShape(acceptedShape("q", a.getQ()),
                                              acceptedShape("k", a.getK()))));
}

static void addMoreResults(MLIRContext *context,
                           MultiheadAttentionOp::Adaptor a,
                           SmallVectorImpl<Type> &resultTypes) {
  // With a cache, the weights are over its rows: [B * heads, T, L].
  if (a.getReturnWeights())
    resultTypes.push_back(toType(
        context, rules::multiheadAttentionWeightsShape(
                     acceptedShape("q", a.getQ()),
                     a.getCacheK() ? acceptedShape("cache_k", a.getCacheK())
                                   : acceptedShape("k", a.getK()),
                     a.getHeadsAttr().getInt())));
  // The caches after the write.
  if (a.getCacheK()) {
    resultTypes.push_back(a.getCacheK().getType());
    resultTypes.push_back(a.getCacheV().getType());
  }
}

template <typename OpT>
static LogicalResult verifyWeightsResult(OpT op, StringRef layout) {
  Value weights = op.getAttentionWeights();
  if (op.getReturnWeights() && !weights)
    return op.emitOpError("with return_weights has two results, the output "
                          "and the attention weights");
  if (!op.getReturnWeights() && weights)
    return op.emitOpError("has a second result, the attention weights, only "
                          "with return_weights");
  if (!weights)
    return success();
  typename OpT::Adaptor adaptor(op);
  // Bad operands are type inference's to report, with the rules' message.
  if (!applyRules(adaptor, [](StringRef, const Twine &) {}))
    return success();
  SmallVector<Type, 1> expected;
  addMoreResults(op.getContext(), adaptor, expected);
  if (weights.getType() != expected.front())
    return op.emitOpError("'attention_weights' must be ")
           << expected.front() << " " << layout << ", got "
           << weights.getType();
  return success();
}

LogicalResult mlir::attn::verifyReturnWeights(AttentionOp op) {
  return verifyWeightsResult(op, "([N, Tq, Tk])");
}

LogicalResult mlir::attn::verifyReturnWeights(MultiheadAttentionOp op) {
  size_t expected = (op.getReturnWeights() ? 1 : 0) + (op.hasCache() ? 2 : 0);
  if (op.hasCache() && op.getMoreResults().size() != expected)
    return op.emitOpError(op.getReturnWeights()
                              ? "with a cache and return_weights has four "
                                "results, the output, the attention weights "
                                "and the updated cache_k and cache_v"
                              : "with a cache has three results, the output "
                                "and the updated cache_k and cache_v");
  if (!op.getReturnWeights() && !op.getMoreResults().empty() && !op.hasCache())
    return op.emitOpError("has a second result, the attention weights, only "
                          "with return_weights");
  if (op.hasCache() && !op.getReturnWeights())
    return success(); // the caches' types are inference's to check
  return verifyWeightsResult(op, op.hasCache() ? "([B * heads, T, L])"
                                               : "([B * heads, Tq, Tk])");
}

//===----------------------------------------------------------------------===//
// Verifiers and result-type inference, all through applyRules
//===----------------------------------------------------------------------===//

template <typename OpT> static LogicalResult verifyWithRules(OpT op) {
  bool reported = false;
  RuleResult result = applyRules(typename OpT::Adaptor(op),
                                 [&](StringRef, const Twine &message) {
                                   if (!reported)
                                     op.emitOpError(message);
                                   reported = true;
                                 });
  return success(result.has_value());
}

template <typename AdaptorT>
static LogicalResult inferWithRules(MLIRContext *context,
                                    std::optional<Location> location,
                                    StringRef opName, AdaptorT adaptor,
                                    SmallVectorImpl<Type> &resultTypes) {
  bool reported = false;
  RuleResult result = applyRules(adaptor, [&](StringRef, const Twine &message) {
    if (location && !reported)
      emitError(*location) << "'" << opName << "' op " << message.str();
    reported = true;
  });
  if (!result)
    return failure();
  resultTypes.push_back(toType(context, *result));
  // The types of every result are checked against these (a missing,
  // extra or misshapen attention_weights result among them).
  addMoreResults(context, adaptor, resultTypes);
  return success();
}

#define ATTN_VERIFY_AND_INFER_WITH_RULES(OP)                                   \
  LogicalResult OP::verify() { return verifyWithRules(*this); }                \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *context, std::optional<Location> location, Adaptor adaptor, \
      SmallVectorImpl<Type> &resultTypes) {                                    \
    return inferWithRules(context, location, getOperationName(), adaptor,      \
                          resultTypes);                                        \
  }

#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  ATTN_VERIFY_AND_INFER_WITH_RULES(Class)
#include "attn/IR/AttnOps.def"

#undef ATTN_VERIFY_AND_INFER_WITH_RULES

//===----------------------------------------------------------------------===//
// CacheUpdateOp
//===----------------------------------------------------------------------===//

LogicalResult CacheUpdateOp::verify() {
  auto cache = cast<RankedTensorType>(getCache().getType());
  auto rows = cast<RankedTensorType>(getRows().getType());
  auto pos = cast<RankedTensorType>(getPos().getType());
  if (cache.getRank() != 3 || rows.getRank() != 3 || pos.getRank() != 1)
    return emitOpError("takes a cache [B, L, E], rows [B, T, E] and positions "
                       "[B], got ")
           << cache << ", " << rows << ", " << pos;
  if (rows.getElementType() != cache.getElementType())
    return emitOpError("rows must have the cache's element type ")
           << cache.getElementType() << ", got " << rows.getElementType();
  if (rows.getDimSize(0) != cache.getDimSize(0) ||
      pos.getDimSize(0) != cache.getDimSize(0) ||
      rows.getDimSize(2) != cache.getDimSize(2) ||
      rows.getDimSize(1) > cache.getDimSize(1))
    return emitOpError("rows must be [B, T <= L, E] and positions [B] for a "
                       "cache ")
           << cache << ", got " << rows << ", " << pos;
  return success();
}

//===----------------------------------------------------------------------===//
// Destination-style attention ops (fused_attention, decode_attention)
//===----------------------------------------------------------------------===//

/// On buffers, `init` is written and every other operand read.
static void destinationEffects(
    Operation *op, OpOperand &init,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (&operand == &init)
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
  }
}

/// On tensors, the result is `init`'s buffer.
static bufferization::AliasingValueList
initAliasing(OpOperand &operand, OpOperand &init, ResultRange results) {
  if (&operand != &init || results.empty())
    return {};
  return {{results[0], bufferization::BufferRelation::Equivalent}};
}

/// The buffers of `op`'s operands, in order.
static FailureOr<SmallVector<Value>>
operandBuffers(Operation *op, RewriterBase &rewriter,
               const bufferization::BufferizationOptions &options,
               bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  return buffers;
}

//===----------------------------------------------------------------------===//
// FusedAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FusedAttentionOp::verify() {
  bool buffers = hasBufferSemantics();
  for (Value operand : getOperation()->getOperands())
    if (isa<MemRefType>(operand.getType()) != buffers)
      return emitOpError("operands must be all tensors or all memrefs");
  if (buffers != getResult().empty())
    return emitOpError(buffers ? "on memrefs has no result"
                               : "on tensors has one result");
  if (!buffers && getResult()[0].getType() != getInit().getType())
    return emitOpError("result type must be the type of 'init'");

  // The shapes follow attn.attention's rules on the per-head views;
  // `init` is its result with the heads merged back.
  int64_t heads = getHeads();
  if (heads < 1)
    return emitOpError("heads must be positive, got ") << heads;
  int64_t kvHeads = getKvHeads() ? static_cast<int64_t>(*getKvHeads()) : heads;
  if (kvHeads < 1 || heads % kvHeads != 0)
    return emitOpError("kv_heads(")
           << kvHeads << ") must be positive and divide heads(" << heads << ")";
  if (std::optional<uint64_t> window = getWindow()) {
    if (static_cast<int64_t>(*window) < 1)
      return emitOpError("window(")
             << static_cast<int64_t>(*window) << ") must be at least 1";
    if (!getCausal())
      return emitOpError("window needs causal");
  }
  // Every row sees a key (its own): the rule only decides what masked keys
  // weigh.
  if (getExclusive() && (!getCausal() || getValidLens()))
    return emitOpError("exclusive needs causal and no valid_lens");
  bool reported = false;
  auto shapeOf = [](Value value) {
    auto type = cast<ShapedType>(value.getType());
    TensorShape shape;
    shape.dims.assign(type.getShape().begin(), type.getShape().end());
    shape.element = elementTypeOf(type.getElementType());
    return shape;
  };
  // [B, T, H*d] -> [B*H, T, d] (split_heads); k and v of kv_heads(G)
  // heads as if repeated to H (repeat_kv); lengths repeated per head.
  std::optional<TensorShape> perHead[3];
  Value projections[3] = {getQ(), getK(), getV()};
  for (int i = 0; i < 3; ++i) {
    TensorShape shape = shapeOf(projections[i]);
    int64_t split = i == 0 ? heads : kvHeads;
    if (heads > 1) {
      static const char *const names[] = {"q", "k", "v"};
      if (shape.dims.size() != 3 || shape.dims[2] % split != 0)
        return emitOpError("with heads(")
               << heads << "), '" << names[i] << "' must be [B, T, "
               << (i == 0 || split == heads ? "heads" : "kv_heads")
               << " * d], got " << rules::formatShape(shape);
      shape.dims = {shape.dims[0] * heads, shape.dims[1],
                    shape.dims[2] / split};
    }
    perHead[i] = shape;
  }
  std::optional<TensorShape> lens;
  if (getValidLens()) {
    lens = shapeOf(getValidLens());
    // q is [B, T, heads * d] when heads > 1 (checked above).
    int64_t batch =
        heads > 1 ? cast<ShapedType>(getQ().getType()).getDimSize(0) : 0;
    if (heads > 1 && (lens->dims.empty() || lens->dims[0] != batch))
      return emitOpError("with heads(")
             << heads << "), 'valid_lens' must have one row per batch entry ("
             << batch << "), got " << rules::formatShape(*lens);
    if (!lens->dims.empty())
      lens->dims[0] *= heads;
  }
  RuleResult result = rules::inferAttention(
      *perHead[0], *perHead[1], *perHead[2], shapeOrNull(lens), getCausal(),
      /*returnWeights=*/false, [&](StringRef, const Twine &message) {
        if (!reported)
          emitOpError(message);
        reported = true;
      });
  if (!result)
    return failure();
  if (heads > 1)
    result->dims = {result->dims[0] / heads, result->dims[1],
                    result->dims[2] * heads};
  if (result->dims != shapeOf(getInit()).dims)
    return emitOpError("'init' must have the attention's result shape ")
           << rules::formatShape(*result);
  if (std::optional<Type> products = getProducts();
      products && !products->isBF16())
    return emitOpError("products must be bf16, got ") << *products;
  // rope(cos, sin): [max(Tq, Tk), dk / 2] each, dk even.
  if (static_cast<bool>(getRopeCos()) != static_cast<bool>(getRopeSin()))
    return emitOpError("rope takes two tables, cos and sin");
  if (getRopeCos()) {
    int64_t dk = perHead[0]->dims[2];
    if (dk % 2 != 0)
      return emitOpError("rope needs an even head dimension, got ") << dk;
    int64_t rows = std::max(perHead[0]->dims[1], perHead[1]->dims[1]);
    for (Value table : {getRopeCos(), getRopeSin()}) {
      TensorShape shape = shapeOf(table);
      // The tables are f32 whatever q's type: positions need its precision.
      if (shape.element != ElementType::F32 ||
          shape.dims != SmallVector<int64_t, 4>{rows, dk / 2})
        return emitOpError("rope tables must be f32[")
               << rows << ", " << dk / 2
               << "] (max(Tq, Tk) positions, head dim / 2), got "
               << rules::formatShape(shape);
    }
  }
  return success();
}

void FusedAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (hasBufferSemantics())
    destinationEffects(*this, getInitMutable(), effects);
}

bool FusedAttentionOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &) {
  // `init` is only written: a tensor.empty destination needs no copy.
  return &operand != &getInitMutable();
}

bool FusedAttentionOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getInitMutable();
}

bool FusedAttentionOp::bufferizesToElementwiseAccess(
    const bufferization::AnalysisState &, ArrayRef<OpOperand *> operands) {
  // q and init may share a buffer (see the op's description); k, v, the
  // lengths and the rope tables are read whole for every row.
  return llvm::all_of(operands, [&](OpOperand *operand) {
    return operand == &getQMutable() || operand == &getInitMutable();
  });
}

bufferization::AliasingValueList
FusedAttentionOp::getAliasingValues(OpOperand &operand,
                                    const bufferization::AnalysisState &) {
  return initAliasing(operand, getInitMutable(), getResult());
}

LogicalResult
FusedAttentionOp::bufferize(RewriterBase &rewriter,
                            const bufferization::BufferizationOptions &options,
                            bufferization::BufferizationState &state) {
  if (hasBufferSemantics())
    return success();
  FailureOr<SmallVector<Value>> operands =
      operandBuffers(*this, rewriter, options, state);
  if (failed(operands))
    return failure();
  SmallVector<Value> &buffers = *operands;
  rewriter.setInsertionPoint(*this);
  // Operands in order: q, k, v, then the optional valid_lens and rope
  // tables, then init.
  unsigned next = 3;
  Value validLens = getValidLens() ? buffers[next++] : Value();
  Value ropeCos = getRopeCos() ? buffers[next++] : Value();
  Value ropeSin = getRopeSin() ? buffers[next++] : Value();
  Value init = buffers.back();
  FusedAttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers[0],
                           buffers[1], buffers[2], validLens, ropeCos, ropeSin,
                           init, getCausalAttr(), getWindowAttr(),
                           getHeadsAttr(), getKvHeadsAttr(), getScaleAttr(),
                           getProductsAttr(), getExclusiveAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, init);
  return success();
}

//===----------------------------------------------------------------------===//
// DecodeAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult DecodeAttentionOp::verify() {
  bool buffers = hasBufferSemantics();
  for (Value operand : getOperation()->getOperands())
    if (isa<MemRefType>(operand.getType()) != buffers)
      return emitOpError("operands must be all tensors or all memrefs");
  if (buffers != getResult().empty())
    return emitOpError(buffers ? "on memrefs has no result"
                               : "on tensors has one result");
  if (!buffers && getResult()[0].getType() != getInit().getType())
    return emitOpError("result type must be the type of 'init'");
  int64_t heads = getHeads();
  int64_t kvHeads = getNumKvHeads();
  if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0)
    return emitOpError("kv_heads(")
           << kvHeads << ") must be positive and divide heads(" << heads << ")";
  if (std::optional<uint64_t> window = getWindow();
      window && static_cast<int64_t>(*window) < 1)
    return emitOpError("window(")
           << static_cast<int64_t>(*window) << ") must be at least 1";
  auto q = cast<ShapedType>(getQ().getType());
  auto k = cast<ShapedType>(getK().getType());
  auto v = cast<ShapedType>(getV().getType());
  auto pos = cast<ShapedType>(getPos().getType());
  if (q.getRank() != 3 || k.getRank() != 3 || pos.getRank() != 1)
    return emitOpError("takes q [B, T, H*d], caches [B, L, G*d] and "
                       "positions [B], got ")
           << q << ", " << k << ", " << pos;
  int64_t batch = q.getDimSize(0);
  if (q.getDimSize(2) % heads != 0)
    return emitOpError("q's last dimension (")
           << q.getDimSize(2) << ") must be heads(" << heads << ") x d";
  int64_t depth = q.getDimSize(2) / heads;
  SmallVector<int64_t> cacheShape = {batch, k.getDimSize(1), kvHeads * depth};
  if (k.getShape() != ArrayRef<int64_t>(cacheShape) ||
      v.getShape() != k.getShape() || v.getElementType() != k.getElementType())
    return emitOpError("the caches must be one type [")
           << batch << ", L, " << kvHeads * depth << "] (B, the cache length, "
           << "kv_heads x d), got " << k << " and " << v;
  if (k.getDimSize(1) < q.getDimSize(1))
    return emitOpError("the caches hold ")
           << k.getDimSize(1) << " rows, fewer than the " << q.getDimSize(1)
           << " new tokens";
  if (pos.getDimSize(0) != batch)
    return emitOpError("'pos' must be [") << batch << "], got " << pos;
  if (cast<ShapedType>(getInit().getType()).getShape() != q.getShape())
    return emitOpError("'init' must have q's shape, got ")
           << getInit().getType();
  if (std::optional<Type> products = getProducts();
      products && !products->isBF16())
    return emitOpError("products must be bf16, got ") << *products;
  return success();
}

void DecodeAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (hasBufferSemantics())
    destinationEffects(*this, getInitMutable(), effects);
}

bool DecodeAttentionOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &) {
  // `init` keeps its rows when a position is out of range: it is read.
  return true;
}

bool DecodeAttentionOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getInitMutable();
}

bufferization::AliasingValueList
DecodeAttentionOp::getAliasingValues(OpOperand &operand,
                                     const bufferization::AnalysisState &) {
  return initAliasing(operand, getInitMutable(), getResult());
}

LogicalResult
DecodeAttentionOp::bufferize(RewriterBase &rewriter,
                             const bufferization::BufferizationOptions &options,
                             bufferization::BufferizationState &state) {
  if (hasBufferSemantics())
    return success();
  FailureOr<SmallVector<Value>> operands =
      operandBuffers(*this, rewriter, options, state);
  if (failed(operands))
    return failure();
  SmallVector<Value> &buffers = *operands;
  rewriter.setInsertionPoint(*this);
  DecodeAttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers[0],
                            buffers[1], buffers[2], buffers[3], buffers[4],
                            getWindowAttr(), getHeadsAttr(), getKvHeadsAttr(),
                            getScaleAttr(), getProductsAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, buffers[4]);
  return success();
}

//===----------------------------------------------------------------------===//
// Folders
//===----------------------------------------------------------------------===//

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().isExactlyValue(1.0))
    return getX();
  return {};
}

// Dropout is the identity at inference.
OpFoldResult DropoutOp::fold(FoldAdaptor) { return getX(); }

#define GET_OP_CLASSES
#include "attn/IR/AttnOps.cpp.inc"
