//===- AST.h - Syntax tree of the .attn language ----------------*- C++ -*-===//
//
// What the parser produces and Sema annotates: every node keeps the source
// range it came from (pointers into the SourceMgr buffer), so errors found
// later still point at the right token. Sema fills in the fields marked
// "Sema:"; MLIRGen reads them and nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_PARSE_AST_H
#define ATTNC_PARSE_AST_H

#include "attn/IR/AttnShapeRules.h"
#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnc {
struct OpInfo;
} // namespace attnc

namespace attnc::ast {

using mlir::attn::abi::ArgumentRole;
using mlir::attn::rules::TensorShape;

struct Block;
class DeclStmt;

/// A name as written, with where it was written.
struct Ident {
  std::string name;
  llvm::SMRange range;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind { Name, Integer, Float, Bool, Call };

  Expr(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;

  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }

  /// Sema: the tensor this expression denotes, when it is a well-typed tensor.
  std::optional<TensorShape> shape;

private:
  Kind kind;
  llvm::SMRange range;
};

class NameExpr : public Expr {
public:
  NameExpr(std::string name, llvm::SMRange range)
      : Expr(Kind::Name, range), name(std::move(name)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

  std::string name;
};

/// An integer literal, with its sign folded in (`-3`).
class IntegerExpr : public Expr {
public:
  IntegerExpr(int64_t value, llvm::SMRange range)
      : Expr(Kind::Integer, range), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Integer; }

  int64_t value;
};

class FloatExpr : public Expr {
public:
  FloatExpr(double value, llvm::SMRange range)
      : Expr(Kind::Float, range), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Float; }

  double value;
};

class BoolExpr : public Expr {
public:
  BoolExpr(bool value, llvm::SMRange range)
      : Expr(Kind::Bool, range), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Bool; }

  bool value;
};

/// One argument of a call: positional (`keyword` empty) or `keyword=value`.
struct Argument {
  Ident keyword;
  std::unique_ptr<Expr> value;

  bool isKeyword() const { return !keyword.name.empty(); }
  /// From the keyword (if any) to the end of the value.
  llvm::SMRange getRange() const {
    return {isKeyword() ? keyword.range.Start : value->getRange().Start,
            value->getRange().End};
  }
};

/// The value Sema bound to one parameter of an op.
struct BoundArgument {
  /// The argument that supplied it; null when the parameter took its default.
  const Argument *source = nullptr;
  /// Tensor parameters: the operand expression.
  const Expr *tensor = nullptr;
  /// Attribute parameters: the value (given or default).
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
};

class CallExpr : public Expr {
public:
  CallExpr(Ident callee, std::vector<Argument> args, llvm::SMRange range)
      : Expr(Kind::Call, range), callee(std::move(callee)),
        args(std::move(args)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

  Ident callee;
  std::vector<Argument> args;

  /// Sema: the op called, and one entry per parameter of `op->params`.
  const OpInfo *op = nullptr;
  /// Sema: or the block of the file called (docs/spec.md §2 "calling a block");
  /// then `bound` has one entry per argument of the callee (its inputs and
  /// params in declaration order, Block::arguments) and `results` its outputs.
  const Block *block = nullptr;
  llvm::SmallVector<BoundArgument, 8> bound;
  /// Sema: the shape of every result, in order; `shape` is the first's.
  /// Two for `attention(..., return_weights=true)`: the output, then the
  /// attention weights.
  llvm::SmallVector<TensorShape, 2> results;

  /// The bound value of the parameter named `param` (Sema must have run).
  const BoundArgument &get(llvm::StringRef param) const;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind { Dim, Decl, Assign, Output };

  Stmt(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}
  virtual ~Stmt() = default;

  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }

private:
  Kind kind;
  llvm::SMRange range;
};

/// `dim B = 2, T = 4`.
class DimStmt : public Stmt {
public:
  struct Def {
    Ident name;
    int64_t value;
    llvm::SMRange valueRange;
  };
  DimStmt(std::vector<Def> defs, llvm::SMRange range)
      : Stmt(Kind::Dim, range), defs(std::move(defs)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Dim; }

  std::vector<Def> defs;
};

/// `f32[B, T, 100]`: an element type name and dims (literals or dim names).
struct TypeExpr {
  struct DimRef {
    std::string name; // empty for a literal
    int64_t value = 0;
    llvm::SMRange range;
  };
  Ident element;
  std::vector<DimRef> dims;
  llvm::SMRange range;
};

/// `input X: f32[B, T, D]`, `param W: f32[D, D]` or `state K: f32[B, L, D]`.
class DeclStmt : public Stmt {
public:
  DeclStmt(ArgumentRole role, Ident name, TypeExpr type, llvm::SMRange range)
      : Stmt(Kind::Decl, range), role(role), name(std::move(name)),
        type(std::move(type)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Decl; }

  bool isParam() const { return role == ArgumentRole::Param; }

  /// Input, Param or State.
  ArgumentRole role;
  Ident name;
  TypeExpr type;
  /// Sema: the declared tensor, when the type is valid.
  std::optional<TensorShape> shape;
};

/// `NAME = expr`, or `Y, A = op(...)` for an op with two results.
class AssignStmt : public Stmt {
public:
  AssignStmt(std::vector<Ident> names, std::unique_ptr<Expr> value,
             llvm::SMRange range)
      : Stmt(Kind::Assign, range), names(std::move(names)),
        value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

  /// One name per result of `value`, in result order (Sema checks the
  /// count); never empty.
  std::vector<Ident> names;
  std::unique_ptr<Expr> value;
};

/// `output Y, Z`.
class OutputStmt : public Stmt {
public:
  OutputStmt(std::vector<Ident> names, llvm::SMRange range)
      : Stmt(Kind::Output, range), names(std::move(names)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Output; }

  std::vector<Ident> names;
};

//===----------------------------------------------------------------------===//
// Blocks and files
//===----------------------------------------------------------------------===//

struct Block {
  Ident name;
  llvm::SMRange range;
  std::vector<std::unique_ptr<Stmt>> stmts;
  /// Set by the parser when a statement of this block failed to parse: the
  /// unused-name check is then skipped (a lost statement may have used them).
  bool hadSyntaxErrors = false;
  /// Names defined by statements that failed to parse: uses of them are not
  /// reported as undefined.
  std::vector<Ident> brokenNames;

  /// Sema: the block's results, in `output` order.
  std::vector<const Ident *> outputs;
  /// Sema: the block's arguments (inputs and params, in declaration order),
  /// the shape of each output, and the blocks it calls (each once, in the
  /// order of their first call). Valid when `checked` without errors.
  std::vector<const DeclStmt *> arguments;
  std::vector<TensorShape> outputShapes;
  std::vector<const Block *> callees;
  /// Sema: checked, and whether that found no error in this block.
  bool checked = false;
  bool valid = false;
};

struct Module {
  std::vector<std::unique_ptr<Block>> blocks;

  /// The block called `name`, or null.
  const Block *lookup(llvm::StringRef name) const;
};

} // namespace attnc::ast

#endif // ATTNC_PARSE_AST_H
