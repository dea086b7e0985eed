//===- AttnOps.cpp - Operations of the attn dialect -----------------------===//
//
// Every op's verifier and result-type inference call the same rule function
// of AttnShapeRules.h; this file only converts between MLIR types and the
// rules' TensorShape.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::attn;
using rules::RuleError;
using rules::RuleResult;
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
    Type element = type.getElementType();
    shape.element = element.isF32()                 ? rules::ElementKind::F32
                    : element.isSignlessInteger(32) ? rules::ElementKind::I32
                                                    : rules::ElementKind::Other;
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

Type toType(MLIRContext *context, const TensorShape &shape) {
  Type element = shape.element == rules::ElementKind::I32
                     ? Type(IntegerType::get(context, 32))
                     : Type(Float32Type::get(context));
  return RankedTensorType::get(shape.dims, element);
}

const TensorShape *ptr(const std::optional<TensorShape> &shape) {
  return shape ? &*shape : nullptr;
}

/// Signed value of a required integer attribute; reports a missing one.
std::optional<int64_t> intAttr(IntegerAttr attr, StringRef name,
                               RuleError error) {
  if (!attr) {
    error(name, "requires the attribute '" + name + "'");
    return std::nullopt;
  }
  return attr.getValue().getSExtValue();
}

std::optional<double> floatAttr(FloatAttr attr, StringRef name,
                                RuleError error) {
  if (!attr) {
    error(name, "requires the attribute '" + name + "'");
    return std::nullopt;
  }
  return attr.getValueAsDouble();
}

/// While parsing, an omitted default-valued attribute is still unset.
double epsOrDefault(FloatAttr eps) {
  return eps ? eps.getValueAsDouble() : rules::kDefaultEps;
}

} // namespace

//===----------------------------------------------------------------------===//
// Per-op rule application
//===----------------------------------------------------------------------===//

static RuleResult applyRules(LinearOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX()), w = s.get("w", a.getW());
  std::optional<TensorShape> b = s.getOptional("b", a.getB());
  if (s.failed())
    return std::nullopt;
  return rules::inferLinear(x, w, ptr(b), error);
}

static RuleResult applyRules(MatmulOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape lhs = s.get("a", a.getA()), rhs = s.get("b", a.getB());
  if (s.failed())
    return std::nullopt;
  return rules::inferMatmul(lhs, rhs, a.getTransposeB(), error);
}

static RuleResult applyRules(ScaleOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  std::optional<double> factor = floatAttr(a.getFactorAttr(), "factor", error);
  if (s.failed() || !factor)
    return std::nullopt;
  return rules::inferScale(x, *factor, error);
}

static RuleResult applyRules(AddOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape lhs = s.get("a", a.getA()), rhs = s.get("b", a.getB());
  if (s.failed())
    return std::nullopt;
  return rules::inferElementwiseBinary(lhs, rhs, error);
}

static RuleResult applyRules(ReluOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  if (s.failed())
    return std::nullopt;
  return rules::inferElementwiseUnary(x, error);
}

static RuleResult applyRules(GeluOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  if (s.failed())
    return std::nullopt;
  return rules::inferElementwiseUnary(x, error);
}

static RuleResult applyRules(SplitHeadsOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  std::optional<int64_t> heads = intAttr(a.getHeadsAttr(), "heads", error);
  if (s.failed() || !heads)
    return std::nullopt;
  return rules::inferSplitHeads(x, *heads, error);
}

static RuleResult applyRules(MergeHeadsOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  std::optional<int64_t> heads = intAttr(a.getHeadsAttr(), "heads", error);
  if (s.failed() || !heads)
    return std::nullopt;
  return rules::inferMergeHeads(x, *heads, error);
}

static RuleResult applyRules(SoftmaxOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  if (s.failed())
    return std::nullopt;
  return rules::inferSoftmax(x, error);
}

static RuleResult applyRules(MaskedSoftmaxOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  TensorShape vl = s.get("valid_lens", a.getValidLens());
  if (s.failed())
    return std::nullopt;
  return rules::inferMaskedSoftmax(x, vl, error);
}

static RuleResult applyRules(AttentionOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape q = s.get("q", a.getQ()), k = s.get("k", a.getK()),
              v = s.get("v", a.getV());
  std::optional<TensorShape> vl = s.getOptional("valid_lens", a.getValidLens());
  if (s.failed())
    return std::nullopt;
  return rules::inferAttention(q, k, v, ptr(vl), error);
}

static RuleResult applyRules(MultiheadAttentionOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape q = s.get("q", a.getQ()), k = s.get("k", a.getK()),
              v = s.get("v", a.getV());
  TensorShape wQ = s.get("w_q", a.getWQ()), wK = s.get("w_k", a.getWK()),
              wV = s.get("w_v", a.getWV()), wO = s.get("w_o", a.getWO());
  std::optional<TensorShape> vl = s.getOptional("valid_lens", a.getValidLens());
  std::optional<int64_t> heads = intAttr(a.getHeadsAttr(), "heads", error);
  if (s.failed() || !heads)
    return std::nullopt;
  return rules::inferMultiheadAttention(q, k, v, wQ, wK, wV, wO, ptr(vl),
                                        *heads, error);
}

static RuleResult applyRules(PositionalEncodingOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  // While parsing, an omitted default-valued attribute is still unset.
  int64_t maxLen =
      a.getMaxLenAttr() ? a.getMaxLenAttr().getInt() : rules::kDefaultMaxLen;
  if (s.failed())
    return std::nullopt;
  return rules::inferPositionalEncoding(x, maxLen, error);
}

static RuleResult applyRules(LayerNormOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX()), gamma = s.get("gamma", a.getGamma()),
              beta = s.get("beta", a.getBeta());
  if (s.failed())
    return std::nullopt;
  return rules::inferLayerNorm(x, gamma, beta, epsOrDefault(a.getEpsAttr()),
                               error);
}

static RuleResult applyRules(AddNormOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX()), y = s.get("y", a.getY()),
              gamma = s.get("gamma", a.getGamma()),
              beta = s.get("beta", a.getBeta());
  if (s.failed())
    return std::nullopt;
  return rules::inferAddNorm(x, y, gamma, beta, epsOrDefault(a.getEpsAttr()),
                             error);
}

static RuleResult applyRules(FfnOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX()), w1 = s.get("w1", a.getW1()),
              b1 = s.get("b1", a.getB1()), w2 = s.get("w2", a.getW2()),
              b2 = s.get("b2", a.getB2());
  if (s.failed())
    return std::nullopt;
  return rules::inferFfn(x, w1, b1, w2, b2, error);
}

static RuleResult applyRules(EmbeddingOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape ids = s.get("ids", a.getIds()),
              table = s.get("table", a.getTable());
  if (s.failed())
    return std::nullopt;
  return rules::inferEmbedding(ids, table, error);
}

static RuleResult applyRules(DropoutOp::Adaptor a, RuleError error) {
  OperandShapes s(error);
  TensorShape x = s.get("x", a.getX());
  std::optional<double> p = floatAttr(a.getPAttr(), "p", error);
  if (s.failed() || !p)
    return std::nullopt;
  return rules::inferDropout(x, *p, error);
}

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
  if (a.getReturnWeights())
    resultTypes.push_back(toType(context, rules::multiheadAttentionWeightsShape(
                                              acceptedShape("q", a.getQ()),
                                              acceptedShape("k", a.getK()),
                                              a.getHeadsAttr().getInt())));
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
  return verifyWeightsResult(op, "([B * heads, Tq, Tk])");
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

ATTN_VERIFY_AND_INFER_WITH_RULES(LinearOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(MatmulOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(ScaleOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(AddOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(ReluOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(GeluOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(SplitHeadsOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(MergeHeadsOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(SoftmaxOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(MaskedSoftmaxOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(AttentionOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(MultiheadAttentionOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(PositionalEncodingOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(LayerNormOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(AddNormOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(FfnOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(EmbeddingOp)
ATTN_VERIFY_AND_INFER_WITH_RULES(DropoutOp)

#undef ATTN_VERIFY_AND_INFER_WITH_RULES

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
  bool reported = false;
  auto shapeOf = [](Value value) {
    auto type = cast<ShapedType>(value.getType());
    TensorShape shape;
    shape.dims.assign(type.getShape().begin(), type.getShape().end());
    shape.element = type.getElementType().isF32() ? rules::ElementKind::F32
                                                  : rules::ElementKind::I32;
    return shape;
  };
  // [B, T, H*d] -> [B*H, T, d] (split_heads); lengths repeated per head.
  std::optional<TensorShape> perHead[3];
  Value projections[3] = {getQ(), getK(), getV()};
  for (int i = 0; i < 3; ++i) {
    TensorShape shape = shapeOf(projections[i]);
    if (heads > 1) {
      static const char *const names[] = {"q", "k", "v"};
      if (shape.dims.size() != 3 || shape.dims[2] % heads != 0)
        return emitOpError("with heads(") << heads << "), '" << names[i]
                                          << "' must be [B, T, heads * d], got "
                                          << rules::formatShape(shape);
      shape.dims = {shape.dims[0] * heads, shape.dims[1],
                    shape.dims[2] / heads};
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
  RuleResult result =
      rules::inferAttention(*perHead[0], *perHead[1], *perHead[2], ptr(lens),
                            [&](StringRef, const Twine &message) {
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
  return success();
}

void FusedAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!hasBufferSemantics())
    return;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (&operand == &getInitMutable())
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
  }
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
  // q and init may share a buffer (see the op's description); k, v and the
  // lengths are read whole for every row.
  return llvm::all_of(operands, [&](OpOperand *operand) {
    return operand == &getQMutable() || operand == &getInitMutable();
  });
}

bufferization::AliasingValueList
FusedAttentionOp::getAliasingValues(OpOperand &operand,
                                    const bufferization::AnalysisState &) {
  if (&operand != &getInitMutable() || getResult().empty())
    return {};
  return {{getResult()[0], bufferization::BufferRelation::Equivalent}};
}

LogicalResult
FusedAttentionOp::bufferize(RewriterBase &rewriter,
                            const bufferization::BufferizationOptions &options,
                            bufferization::BufferizationState &state) {
  if (hasBufferSemantics())
    return success();
  SmallVector<Value> buffers;
  for (Value operand : getOperation()->getOperands()) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  Value validLens = getValidLens() ? buffers[3] : Value();
  Value init = buffers.back();
  FusedAttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers[0],
                           buffers[1], buffers[2], validLens, init,
                           getCausalAttr(), getHeadsAttr(), getScaleAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, init);
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
