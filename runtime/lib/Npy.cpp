//===- Npy.cpp - NumPy .npy reader and writer -----------------------------===//
//
// Format:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//
//   "\x93NUMPY" major minor HEADER_LEN HEADER DATA
//
// HEADER_LEN is a little-endian uint16 (1.0) or uint32 (2.0, 3.0); HEADER is
// the repr of a Python dict with the keys 'descr', 'fortran_order' and
// 'shape', padded with spaces and terminated by '\n'.
//
//===----------------------------------------------------------------------===//

#include "attnc/Runtime/Npy.h"

#include "attn/Target/FloatConversions.h"

#include "attnc/Support/ReadFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstring>
#include <limits>

using namespace llvm;

namespace attnc {

namespace {

/// A .npy dtype: a kernel element type (its descr and size from the
/// element-type table), or one that files may hold for an argument of
/// another type (int64 for i32, uint16 bit patterns for bf16), or float64,
/// read for what is not an argument (a golden's reference).
struct NpyDtypeInfo {
  NpyDtype dtype;
  std::optional<mlir::attn::ElementType> element;
  /// Without an element type: the descr and the size.
  StringLiteral descr = "";
  size_t bytes = 0;
};

constexpr NpyDtypeInfo kNpyDtypes[] = {
    {NpyDtype::F32, mlir::attn::ElementType::F32},
    {NpyDtype::BF16, mlir::attn::ElementType::BF16},
    {NpyDtype::F16, mlir::attn::ElementType::F16},
    {NpyDtype::I32, mlir::attn::ElementType::I32},
    {NpyDtype::I64, std::nullopt, "<i8", 8},
    {NpyDtype::U16, std::nullopt, "<u2", 2},
    {NpyDtype::F64, std::nullopt, "<f8", 8},
};

const NpyDtypeInfo &infoOf(NpyDtype dtype) {
  for (const NpyDtypeInfo &info : kNpyDtypes)
    if (info.dtype == dtype)
      return info;
  llvm_unreachable("unknown NpyDtype");
}

} // namespace

StringRef npyDtypeDescr(NpyDtype dtype) {
  const NpyDtypeInfo &info = infoOf(dtype);
  return info.element ? StringRef(mlir::attn::describe(*info.element).npyDescr)
                      : StringRef(info.descr);
}

size_t npyDtypeSize(NpyDtype dtype) {
  const NpyDtypeInfo &info = infoOf(dtype);
  return info.element ? mlir::attn::bytesOf(*info.element) : info.bytes;
}

std::optional<NpyDtype> npyDtypeOf(mlir::attn::ElementType type) {
  for (const NpyDtypeInfo &info : kNpyDtypes)
    if (info.element == type)
      return info.dtype;
  return std::nullopt;
}

size_t NpyArray::numElements() const {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

std::string formatNpyShape(ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  s += ")";
  return s;
}

//===----------------------------------------------------------------------===//
// Host values <-> little-endian bytes
//===----------------------------------------------------------------------===//

namespace {

template <typename T>
NpyArray fromValues(NpyDtype dtype, std::vector<int64_t> shape,
                    ArrayRef<T> values) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  assert(a.numElements() == values.size() && "shape does not match values");
  a.data.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    T v = values[i];
    if constexpr (std::is_floating_point_v<T>) {
      // Floats by their bits (uint32_t for float, uint64_t for double).
      std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits;
      std::memcpy(&bits, &v, sizeof(T));
      support::endian::write<decltype(bits), llvm::endianness::little>(
          a.data.data() + sizeof(T) * i, bits);
    } else if constexpr (sizeof(T) == 4) {
      support::endian::write32le(a.data.data() + 4 * i,
                                 static_cast<uint32_t>(v));
    } else if constexpr (sizeof(T) == 2) {
      support::endian::write16le(a.data.data() + 2 * i,
                                 static_cast<uint16_t>(v));
    } else {
      support::endian::write64le(a.data.data() + 8 * i,
                                 static_cast<uint64_t>(v));
    }
  }
  return a;
}

template <typename T>
std::vector<T> toValues(const NpyArray &a, NpyDtype expected) {
  assert(a.dtype == expected && "dtype mismatch");
  (void)expected;
  size_t n = a.data.size() / sizeof(T);
  std::vector<T> out(n);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      auto bits = support::endian::read<
          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>,
          llvm::endianness::little>(a.data.data() + sizeof(T) * i);
      std::memcpy(&out[i], &bits, sizeof(T));
    } else if constexpr (sizeof(T) == 4) {
      out[i] = static_cast<T>(support::endian::read32le(a.data.data() + 4 * i));
    } else if constexpr (sizeof(T) == 2) {
      out[i] = static_cast<T>(support::endian::read16le(a.data.data() + 2 * i));
    } else {
      out[i] = static_cast<T>(support::endian::read64le(a.data.data() + 8 * i));
    }
  }
  return out;
}

} // namespace

NpyArray NpyArray::fromF32(std::vector<int64_t> shape, ArrayRef<float> values) {
  return fromValues(NpyDtype::F32, std::move(shape), values);
}
NpyArray NpyArray::fromI32(std::vector<int64_t> shape,
                           ArrayRef<int32_t> values) {
  return fromValues(NpyDtype::I32, std::move(shape), values);
}
NpyArray NpyArray::fromI64(std::vector<int64_t> shape,
                           ArrayRef<int64_t> values) {
  return fromValues(NpyDtype::I64, std::move(shape), values);
}
NpyArray NpyArray::fromF64(std::vector<int64_t> shape,
                           ArrayRef<double> values) {
  return fromValues(NpyDtype::F64, std::move(shape), values);
}
NpyArray NpyArray::fromBits16(NpyDtype dtype, std::vector<int64_t> shape,
                              ArrayRef<uint16_t> bits) {
  assert(npyDtypeSize(dtype) == 2 && "a 16-bit dtype");
  return fromValues(dtype, std::move(shape), bits);
}

std::vector<uint16_t> NpyArray::toBits16() const {
  assert(npyDtypeSize(dtype) == 2 && "a 16-bit dtype");
  return toValues<uint16_t>(*this, dtype);
}

std::vector<float> NpyArray::toFloats() const {
  if (dtype == NpyDtype::F32)
    return toF32();
  std::vector<uint16_t> bits = toBits16();
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = mlir::attn::widenFrom(*infoOf(dtype).element, bits[i]);
  return values;
}

std::vector<float> NpyArray::toF32() const {
  return toValues<float>(*this, NpyDtype::F32);
}
std::vector<int32_t> NpyArray::toI32() const {
  return toValues<int32_t>(*this, NpyDtype::I32);
}
std::vector<int64_t> NpyArray::toI64() const {
  return toValues<int64_t>(*this, NpyDtype::I64);
}
std::vector<double> NpyArray::toF64() const {
  return toValues<double>(*this, NpyDtype::F64);
}

//===----------------------------------------------------------------------===//
// Header parsing: a small parser for the Python literals a header may hold.
//===----------------------------------------------------------------------===//

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMaxRank = 64;
constexpr unsigned kMaxNesting = 16;

struct PyValue {
  enum Kind { Str, Bool, None, Int, Tuple, List, Dict } kind = None;
  std::string str; // Str
  bool boolean = false;
  int64_t integer = 0;        // Int
  bool overflow = false;      // Int too large for int64
  std::vector<PyValue> elems; // Tuple, List; Dict as key, value, key, ...
  StringRef text;             // the source text of the value
};

class HeaderParser {
public:
  HeaderParser(StringRef src, StringRef name) : src(src), name(name) {}

  Expected<PyValue> parseHeader() {
    skipSpace();
    if (pos >= src.size() || src[pos] != '{')
      return error("expected the header to start with '{'");
    Expected<PyValue> v = parseValue(0);
    if (!v)
      return v.takeError();
    skipSpace();
    if (pos != src.size())
      return error("unexpected '" + printable(src[pos]) +
                   "' after the header dict; expected only spaces and '\\n'");
    return v;
  }

private:
  Error error(const Twine &msg) const {
    return createStringError(inconvertibleErrorCode(),
                             name + ": malformed .npy header: " + msg +
                                 " (at header offset " + Twine(pos) + ")");
  }

  static std::string printable(char c) {
    if (c >= 0x20 && c < 0x7f)
      return std::string(1, c);
    std::string s = "\\x";
    s += hexdigit((c >> 4) & 0xf, true);
    s += hexdigit(c & 0xf, true);
    return s;
  }

  void skipSpace() {
    while (pos < src.size() && (src[pos] == ' ' || src[pos] == '\t' ||
                                src[pos] == '\n' || src[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(StringRef word) {
    if (!src.substr(pos).starts_with(word))
      return false;
    size_t end = pos + word.size();
    if (end < src.size() && (isAlnum(src[end]) || src[end] == '_'))
      return false;
    pos = end;
    return true;
  }

  Expected<PyValue> parseValue(unsigned depth) {
    if (depth > kMaxNesting)
      return error("values nested too deeply");
    skipSpace();
    if (pos >= src.size())
      return error("unexpected end of header; expected a value");
    size_t begin = pos;
    Expected<PyValue> v = parseValueImpl(depth);
    if (v)
      v->text = src.slice(begin, pos);
    return v;
  }

  Expected<PyValue> parseValueImpl(unsigned depth) {
    char c = src[pos];
    PyValue v;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      char quote = c;
      ++pos;
      while (true) {
        if (pos >= src.size())
          return error("unterminated string");
        char d = src[pos++];
        if (d == quote)
          break;
        if (d == '\n')
          return error("unterminated string");
        if (d == '\\') {
          if (pos >= src.size())
            return error("unterminated string");
          d = src[pos++];
        }
        v.str += d;
      }
      return v;
    }
    if (c == '(' || c == '[' || c == '{') {
      char close = c == '(' ? ')' : c == '[' ? ']' : '}';
      std::string closeStr(1, close);
      v.kind = c == '('   ? PyValue::Tuple
               : c == '[' ? PyValue::List
                          : PyValue::Dict;
      ++pos;
      bool sawComma = false;
      while (true) {
        skipSpace();
        if (pos >= src.size())
          return error("unexpected end of header; expected '" + closeStr + "'");
        if (src[pos] == close) {
          ++pos;
          break;
        }
        Expected<PyValue> e = parseValue(depth + 1);
        if (!e)
          return e.takeError();
        v.elems.push_back(std::move(*e));
        skipSpace();
        if (v.kind == PyValue::Dict) {
          if (pos >= src.size() || src[pos] != ':')
            return error("expected ':' after a dict key");
          ++pos;
          Expected<PyValue> val = parseValue(depth + 1);
          if (!val)
            return val.takeError();
          v.elems.push_back(std::move(*val));
          skipSpace();
        }
        if (pos < src.size() && src[pos] == ',') {
          ++pos;
          sawComma = true;
          continue;
        }
        if (pos < src.size() && src[pos] == close) {
          ++pos;
          break;
        }
        if (pos >= src.size())
          return error("unexpected end of header; expected ',' or '" +
                       closeStr + "'");
        return error(Twine("unexpected '") + printable(src[pos]) +
                     "'; expected ',' or '" + closeStr + "'");
      }
      // Python: "(3)" is the integer 3, not a tuple.
      if (v.kind == PyValue::Tuple && v.elems.size() == 1 && !sawComma)
        return std::move(v.elems.front());
      return v;
    }
    if (c == '-' || c == '+' || isDigit(c)) {
      v.kind = PyValue::Int;
      bool negative = c == '-';
      if (c == '-' || c == '+')
        ++pos;
      if (pos >= src.size() || !isDigit(src[pos]))
        return error("expected digits after a sign");
      uint64_t mag = 0;
      while (pos < src.size() && isDigit(src[pos])) {
        unsigned digit = src[pos++] - '0';
        if (mag > (std::numeric_limits<uint64_t>::max() - digit) / 10)
          v.overflow = true;
        else
          mag = mag * 10 + digit;
      }
      if (pos < src.size() && (src[pos] == 'L' || src[pos] == 'l'))
        ++pos; // Python 2 long suffix.
      if (pos < src.size() && (src[pos] == '.' || src[pos] == 'e' ||
                               src[pos] == 'E' || src[pos] == 'j'))
        return error("only integer numbers may appear in a header");
      if (!v.overflow && mag > uint64_t(std::numeric_limits<int64_t>::max()))
        v.overflow = true;
      v.integer = negative ? -int64_t(mag) : int64_t(mag);
      return v;
    }
    if (consumeWord("True")) {
      v.kind = PyValue::Bool;
      v.boolean = true;
      return v;
    }
    if (consumeWord("False")) {
      v.kind = PyValue::Bool;
      return v;
    }
    if (consumeWord("None"))
      return v;
    return error("unexpected '" + printable(c) +
                 "'; expected a string, number, True, False, None, tuple, "
                 "list or dict");
  }

  StringRef src;
  StringRef name;
  size_t pos = 0;
};

Error npyError(StringRef name, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), name + ": " + msg);
}

/// "'<f4', '<V2', ... or '<f8'": the descrs .npy I/O reads.
std::string knownDescrs() {
  std::string text;
  for (auto [i, info] : llvm::enumerate(kNpyDtypes)) {
    if (i > 0)
      text += i + 1 == std::size(kNpyDtypes) ? " or " : ", ";
    text += "'" + npyDtypeDescr(info.dtype).str() + "'";
  }
  return text;
}

Expected<NpyDtype> interpretDescr(const PyValue &v, StringRef name) {
  if (v.kind == PyValue::List)
    return npyError(name, "structured dtype " + v.text +
                              " is not supported; expected " + knownDescrs());
  if (v.kind != PyValue::Str)
    return npyError(name, "'descr' is " + v.text +
                              "; expected a dtype string " + knownDescrs());
  StringRef d = v.str;
  for (const NpyDtypeInfo &info : kNpyDtypes)
    if (d == npyDtypeDescr(info.dtype))
      return info.dtype;
  if (d.starts_with(">"))
    return npyError(name, "big-endian dtype '" + d +
                              "' is not supported; expected little-endian " +
                              knownDescrs() +
                              " (convert with "
                              "arr.astype(arr.dtype.newbyteorder('<')))");
  // What to save instead: the kind of the file's dtype (f, i, u, b).
  llvm::StringRef hint;
  if (d.size() > 1 && d[1] == 'f')
    hint = " (save it as float32: np.save(path, a.astype(np.float32)))";
  else if (d.size() > 1 && (d[1] == 'i' || d[1] == 'u' || d[1] == 'b'))
    hint = " (save it as int32: np.save(path, a.astype(np.int32)))";
  return npyError(name, "dtype '" + d + "' is not supported; expected " +
                            knownDescrs() + hint);
}

} // namespace

Expected<NpyArray> parseNpy(StringRef bytes, StringRef name) {
  if (bytes.size() < kMagicLen || bytes.substr(0, kMagicLen) != kMagic)
    return npyError(name, "not a .npy file: expected the magic string "
                          "\"\\x93NUMPY\" at the start, found " +
                              (bytes.size() < kMagicLen
                                   ? "a " + Twine(bytes.size()) + "-byte file"
                                   : Twine("other bytes")));
  if (bytes.size() < kMagicLen + 2)
    return npyError(name, "truncated file: " + Twine(bytes.size()) +
                              " bytes; expected at least 8 bytes (magic and "
                              "version)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  unsigned minor = static_cast<unsigned char>(bytes[7]);
  if (!(major >= 1 && major <= 3) || minor != 0)
    return npyError(name, "format version " + Twine(major) + "." +
                              Twine(minor) +
                              " is not supported; expected 1.0, 2.0 or 3.0");
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (bytes.size() < prefix)
    return npyError(name, "truncated file: " + Twine(bytes.size()) +
                              " bytes; expected at least " + Twine(prefix) +
                              " bytes (magic, version, header length)");
  uint64_t headerLen = major == 1 ? support::endian::read16le(bytes.data() + 8)
                                  : support::endian::read32le(bytes.data() + 8);
  if (headerLen > bytes.size() - prefix)
    return npyError(name, "truncated file: the header is " + Twine(headerLen) +
                              " bytes but only " +
                              Twine(bytes.size() - prefix) +
                              " bytes follow the header length");
  StringRef headerText = bytes.substr(prefix, headerLen);

  HeaderParser parser(headerText, name);
  Expected<PyValue> header = parser.parseHeader();
  if (!header)
    return header.takeError();
  if (header->kind != PyValue::Dict)
    return npyError(name, "malformed .npy header: expected a dict");

  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (size_t i = 0; i + 1 < header->elems.size(); i += 2) {
    const PyValue &key = header->elems[i];
    const PyValue &value = header->elems[i + 1];
    if (key.kind != PyValue::Str)
      return npyError(name, "malformed .npy header: key " + key.text +
                                " is not a string");
    const PyValue **slot = key.str == "descr"           ? &descr
                           : key.str == "fortran_order" ? &fortran
                           : key.str == "shape"         ? &shape
                                                        : nullptr;
    if (!slot)
      return npyError(name, "malformed .npy header: unexpected key '" +
                                key.str +
                                "'; expected only 'descr', 'fortran_order' "
                                "and 'shape'");
    if (*slot)
      return npyError(name,
                      "malformed .npy header: duplicate key '" + key.str + "'");
    *slot = &value;
  }
  for (auto [ptr, key] :
       {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"},
        std::pair{shape, "shape"}})
    if (!ptr)
      return npyError(name, Twine("malformed .npy header: missing key '") +
                                key +
                                "'; expected 'descr', 'fortran_order' "
                                "and 'shape'");

  Expected<NpyDtype> dtype = interpretDescr(*descr, name);
  if (!dtype)
    return dtype.takeError();

  if (fortran->kind != PyValue::Bool)
    return npyError(name,
                    "'fortran_order' is " + fortran->text + "; expected False");
  if (fortran->boolean)
    return npyError(name, "Fortran-order arrays are not supported; expected "
                          "fortran_order False (save a C-contiguous array, "
                          "e.g. np.ascontiguousarray(a))");

  if (shape->kind != PyValue::Tuple)
    return npyError(name, "'shape' is " + shape->text +
                              "; expected a tuple of non-negative integers");
  if (shape->elems.size() > kMaxRank)
    return npyError(name, "shape has " + Twine(shape->elems.size()) +
                              " dimensions; expected at most " +
                              Twine(kMaxRank));
  NpyArray array;
  array.dtype = *dtype;
  size_t itemSize = npyDtypeSize(*dtype);
  uint64_t numBytes = itemSize;
  bool tooLarge = false;
  for (const PyValue &dim : shape->elems) {
    if (dim.kind != PyValue::Int)
      return npyError(name, "shape " + shape->text + " has the entry " +
                                dim.text + "; expected non-negative integers");
    if (dim.overflow)
      return npyError(name, "shape " + shape->text + " has the dimension " +
                                dim.text + ", which is too large");
    if (dim.integer < 0)
      return npyError(
          name, "shape " + shape->text + " has the negative dimension " +
                    Twine(dim.integer) + "; expected non-negative integers");
    array.shape.push_back(dim.integer);
    uint64_t product;
    if (!tooLarge) {
      if (__builtin_mul_overflow(numBytes, uint64_t(dim.integer), &product) ||
          product > uint64_t(std::numeric_limits<int64_t>::max()))
        tooLarge = true;
      else
        numBytes = product;
    }
  }
  // A zero-sized dimension makes the array empty whatever the others are.
  if (llvm::is_contained(array.shape, 0)) {
    tooLarge = false;
    numBytes = 0;
  }
  if (tooLarge)
    return npyError(name, "shape " + formatNpyShape(array.shape) +
                              " is too large: its size in bytes overflows");

  size_t dataOffset = prefix + headerLen;
  uint64_t available = bytes.size() - dataOffset;
  std::string what =
      formatNpyShape(array.shape) + " " + npyDtypeDescr(*dtype).str();
  if (available < numBytes)
    return npyError(name, "truncated file: expected " + Twine(numBytes) +
                              " data bytes for shape " + what + ", found " +
                              Twine(available));
  if (available > numBytes)
    return npyError(name, "file has " + Twine(available - numBytes) +
                              " trailing bytes: expected " + Twine(numBytes) +
                              " data bytes for shape " + what + ", found " +
                              Twine(available));
  array.data.assign(bytes.begin() + dataOffset, bytes.end());
  return array;
}

Expected<NpyArray> readNpy(StringRef path, uint64_t maxBytes) {
  // A file that does not start as a .npy is rejected from its first bytes,
  // not read to its end (a device or a pipe may have none).
  auto startsAsNpy = [&](StringRef start) -> Error {
    if (start.size() >= kMagicLen && start.substr(0, kMagicLen) != kMagic)
      return parseNpy(start, path).takeError();
    return Error::success();
  };
  auto buffer = readFileAtMost(path, maxBytes, ".npy file", startsAsNpy);
  if (!buffer)
    return buffer.takeError();
  return parseNpy((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Expected<std::string> serializeNpy(const NpyArray &array) {
  uint64_t numElements = 1;
  for (int64_t d : array.shape) {
    if (d < 0)
      return createStringError(inconvertibleErrorCode(),
                               "cannot write an array with shape " +
                                   formatNpyShape(array.shape) +
                                   ": negative dimension");
    if (__builtin_mul_overflow(numElements, uint64_t(d), &numElements))
      return createStringError(inconvertibleErrorCode(),
                               "cannot write an array with shape " +
                                   formatNpyShape(array.shape) +
                                   ": too many elements");
  }
  uint64_t numBytes;
  if (__builtin_mul_overflow(numElements, npyDtypeSize(array.dtype),
                             &numBytes) ||
      numBytes != array.data.size())
    return createStringError(
        inconvertibleErrorCode(),
        "cannot write an array with shape " + formatNpyShape(array.shape) +
            " " + npyDtypeDescr(array.dtype) + ": it has " +
            Twine(array.data.size()) + " data bytes; expected " +
            Twine(numElements) + " elements of " +
            Twine(npyDtypeSize(array.dtype)) + " bytes");

  // The same bytes NumPy >= 1.23 writes: sorted keys, a trailing ", ", spare
  // spaces so the first axis can grow to 21 digits in place, then padding to
  // a multiple of 64 and '\n'.
  std::string dict =
      "{'descr': '" + npyDtypeDescr(array.dtype).str() +
      "', 'fortran_order': False, 'shape': " + formatNpyShape(array.shape) +
      ", }";
  if (!array.shape.empty()) {
    size_t digits = std::to_string(array.shape.front()).size();
    if (digits < 21)
      dict.append(21 - digits, ' ');
  }
  constexpr size_t kAlign = 64;
  size_t hlen = dict.size() + 1; // with '\n'
  unsigned major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t pad = kAlign - (prefix + hlen) % kAlign;
  if (hlen + pad > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    pad = kAlign - (prefix + hlen) % kAlign;
  }
  std::string out(kMagic, kMagicLen);
  out += char(major);
  out += char(0);
  size_t total = hlen + pad;
  if (major == 1) {
    char buf[2];
    support::endian::write16le(buf, uint16_t(total));
    out.append(buf, 2);
  } else {
    char buf[4];
    support::endian::write32le(buf, uint32_t(total));
    out.append(buf, 4);
  }
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  assert(out.size() % kAlign == 0);
  out.append(array.data.begin(), array.data.end());
  return out;
}

Error writeNpy(StringRef path, const NpyArray &array) {
  Expected<std::string> bytes = serializeNpy(array);
  if (!bytes)
    return npyError(path, toString(bytes.takeError()));
  Expected<sys::fs::TempFile> temp =
      sys::fs::TempFile::create(path + ".tmp-%%%%%%%%");
  if (!temp)
    return npyError(path, "cannot create a temporary file next to it: " +
                              toString(temp.takeError()));
  {
    raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << *bytes;
    os.flush();
    if (os.has_error()) {
      std::string msg = os.error().message();
      os.clear_error();
      consumeError(temp->discard());
      return npyError(path, "cannot write: " + msg);
    }
  }
  if (Error e = temp->keep(path)) {
    std::string msg = toString(std::move(e));
    consumeError(temp->discard());
    return npyError(path,
                    "cannot rename the temporary file into place: " + msg);
  }
  return Error::success();
}

Expected<NpyArray> narrowToI32(const NpyArray &array, StringRef name) {
  if (array.dtype == NpyDtype::I32)
    return array;
  if (array.dtype != NpyDtype::I64)
    return npyError(name, "expected an integer array ('<i4' or '<i8'), "
                          "found '" +
                              npyDtypeDescr(array.dtype) + "'");
  std::vector<int64_t> wide = array.toI64();
  std::vector<int32_t> narrow(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < std::numeric_limits<int32_t>::min() ||
        wide[i] > std::numeric_limits<int32_t>::max())
      return npyError(name, "value " + Twine(wide[i]) + " at flat index " +
                                Twine(i) +
                                " does not fit in int32; expected values in "
                                "[-2147483648, 2147483647]");
    narrow[i] = static_cast<int32_t>(wide[i]);
  }
  return NpyArray::fromI32(array.shape, narrow);
}

} // namespace attnc
