//===- NpyTest.cpp - .npy reader/writer tests -----------------------------===//

#include "attnc/Runtime/Npy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cstring>
#include <random>

using namespace attnc;

#ifndef ATTNC_TEST_DATA_DIR
#error "ATTNC_TEST_DATA_DIR must point at tests/data"
#endif

namespace {

std::string fixture(llvm::StringRef name) {
  llvm::SmallString<256> p(ATTNC_TEST_DATA_DIR);
  llvm::sys::path::append(p, "npy", name);
  return std::string(p);
}

std::string fileBytes(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(bool(buf)) << path;
  return buf ? (*buf)->getBuffer().str() : std::string();
}

/// The error message of \p e (which must be a failure).
template <typename T> std::string errorOf(llvm::Expected<T> e) {
  if (e) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(e.takeError());
}

/// A .npy file with header text \p header (padded with spaces and '\n' to a
/// multiple of 16) followed by \p data.
std::string makeNpy(const std::string &header, const std::string &data,
                    int major = 1) {
  std::string h = header;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 16)
    h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  out += char(h.size() & 0xff);
  out += char((h.size() >> 8) & 0xff);
  if (major != 1) {
    out += char((h.size() >> 16) & 0xff);
    out += char((h.size() >> 24) & 0xff);
  }
  return out + h + data;
}

std::string floatBytes(std::initializer_list<float> values) {
  std::string s;
  for (float f : values) {
    char b[4];
    std::memcpy(b, &f, 4); // The tests run on little-endian hosts.
    s.append(b, 4);
  }
  return s;
}

class NpyFile : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("attnc-npy", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  llvm::SmallString<256> dir;
};

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

NpyArray sampleArray(NpyDtype dtype, std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= d;
  switch (dtype) {
  case NpyDtype::F32: {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = 0.25f * float(i) - 3.5f;
    return NpyArray::fromF32(shape, v);
  }
  case NpyDtype::I32: {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = int32_t(i * 7919) - 1000;
    return NpyArray::fromI32(shape, v);
  }
  case NpyDtype::I64: {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = int64_t(i) * 123456789012LL - 5;
    return NpyArray::fromI64(shape, v);
  }
  case NpyDtype::F64: {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = 0.1 * double(i) - 1e300 * double(i % 2);
    return NpyArray::fromF64(shape, v);
  }
  case NpyDtype::BF16:
  case NpyDtype::F16:
  case NpyDtype::U16: {
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = uint16_t(i * 40503u + 17);
    return NpyArray::fromBits16(dtype, shape, v);
  }
  }
  return {};
}

const std::vector<std::vector<int64_t>> kShapes = {
    {}, {5}, {1}, {0}, {2, 3}, {3, 0, 2}, {2, 3, 4}, {2, 1, 3, 5}};

TEST_F(NpyFile, RoundTripEveryDtypeAndRank) {
  for (NpyDtype dtype :
       {NpyDtype::F32, NpyDtype::BF16, NpyDtype::F16, NpyDtype::I32,
        NpyDtype::I64, NpyDtype::U16, NpyDtype::F64}) {
    for (const auto &shape : kShapes) {
      NpyArray a = sampleArray(dtype, shape);
      std::string where =
          npyDtypeDescr(dtype).str() + " " + formatNpyShape(shape);
      llvm::Expected<std::string> bytes = serializeNpy(a);
      ASSERT_TRUE(bool(bytes)) << where;
      // Data starts at a multiple of 64 bytes.
      EXPECT_EQ((bytes->size() - a.data.size()) % 64, 0u) << where;
      EXPECT_EQ((*bytes)[bytes->size() - a.data.size() - 1], '\n') << where;

      llvm::Expected<NpyArray> parsed = parseNpy(*bytes, "mem.npy");
      ASSERT_TRUE(bool(parsed)) << where << llvm::toString(parsed.takeError());
      EXPECT_EQ(parsed->dtype, dtype) << where;
      EXPECT_EQ(parsed->shape, shape) << where;
      EXPECT_EQ(parsed->data, a.data) << where;

      std::string file = path("a.npy");
      ASSERT_FALSE(bool(writeNpy(file, a))) << where;
      llvm::Expected<NpyArray> read = readNpy(file);
      ASSERT_TRUE(bool(read)) << where;
      EXPECT_EQ(read->dtype, dtype);
      EXPECT_EQ(read->shape, shape);
      EXPECT_EQ(read->data, a.data);
      EXPECT_EQ(read->numElements(), a.numElements());
    }
  }
}

TEST(Npy, LowPrecisionDescrsAndValues) {
  // bf16 as ml_dtypes saves it (raw 2-byte records), f16 as NumPy does.
  EXPECT_EQ(npyDtypeDescr(NpyDtype::BF16), "<V2");
  EXPECT_EQ(npyDtypeDescr(NpyDtype::F16), "<f2");
  EXPECT_EQ(npyDtypeDescr(NpyDtype::U16), "<u2");
  EXPECT_EQ(npyDtypeOf(mlir::attn::ElementType::BF16), NpyDtype::BF16);
  NpyArray b =
      NpyArray::fromBits16(NpyDtype::BF16, {3}, {0x3fc0, 0xc000, 0x7f80});
  EXPECT_EQ(b.toFloats(), (std::vector<float>{1.5f, -2.0f, INFINITY}));
  NpyArray h =
      NpyArray::fromBits16(NpyDtype::F16, {3}, {0x3e00, 0xc000, 0x0001});
  EXPECT_EQ(h.toFloats(), (std::vector<float>{1.5f, -2.0f, 0x1p-24f}));
}

TEST(Npy, HostValueConversions) {
  NpyArray f = NpyArray::fromF32({2}, {1.5f, -2.0f});
  EXPECT_EQ(f.toF32(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f.data,
            std::vector<char>({0, 0, (char)0xc0, 0x3f, 0, 0, 0, (char)0xc0}));
  NpyArray i = NpyArray::fromI64({}, {-2});
  EXPECT_EQ(i.numElements(), 1u);
  EXPECT_EQ(i.toI64(), std::vector<int64_t>{-2});
  EXPECT_EQ(formatNpyShape({}), "()");
  EXPECT_EQ(formatNpyShape({3}), "(3,)");
  EXPECT_EQ(formatNpyShape({2, 4, 100}), "(2, 4, 100)");
}

TEST(Npy, SerializeMatchesNumPyBytes) {
  // NumPy 1.24 wrote these; our writer produces identical files.
  struct Case {
    const char *file;
    NpyArray array;
  } cases[] = {
      {"f32_2x3.npy",
       NpyArray::fromF32({2, 3}, {0.5f, -1.25f, 3.0f, 1e-8f, -0.0f, 65504.0f})},
      {"i32_vec.npy",
       NpyArray::fromI32({4}, {3, -2, 2147483647, -2147483647 - 1})},
      {"i64_vec.npy", NpyArray::fromI64({4}, {3, 2, 0, 1})},
      {"f32_scalar.npy", NpyArray::fromF32({}, {2.5f})},
      {"f32_empty.npy", NpyArray::fromF32({0, 3}, {})},
  };
  for (const Case &c : cases) {
    llvm::Expected<std::string> bytes = serializeNpy(c.array);
    ASSERT_TRUE(bool(bytes));
    EXPECT_EQ(*bytes, fileBytes(fixture(c.file))) << c.file;
  }
}

TEST(Npy, SerializeRejectsInconsistentArray) {
  NpyArray a;
  a.dtype = NpyDtype::F32;
  a.shape = {2, 3};
  a.data.resize(20);
  std::string msg = errorOf(serializeNpy(a));
  EXPECT_NE(msg.find("20 data bytes; expected 6 elements of 4 bytes"),
            std::string::npos)
      << msg;
  a.shape = {-1};
  msg = errorOf(serializeNpy(a));
  EXPECT_NE(msg.find("negative dimension"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// Files written by NumPy
//===----------------------------------------------------------------------===//

TEST(Npy, ReadsNumPyFiles) {
  auto f32 = readNpy(fixture("f32_2x3.npy"));
  ASSERT_TRUE(bool(f32)) << llvm::toString(f32.takeError());
  EXPECT_EQ(f32->dtype, NpyDtype::F32);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f32->toF32(),
            (std::vector<float>{0.5f, -1.25f, 3.0f, 1e-8f, -0.0f, 65504.0f}));

  // float64 as NumPy saves it (the goldens' references).
  auto f64 = readNpy(fixture("f8.npy"));
  ASSERT_TRUE(bool(f64)) << llvm::toString(f64.takeError());
  EXPECT_EQ(f64->dtype, NpyDtype::F64);
  EXPECT_EQ(f64->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f64->toF64(), (std::vector<double>{0.5, -1.25, 3.0, double(1e-8f),
                                               -0.0, 65504.0}));

  auto i32 = readNpy(fixture("i32_vec.npy"));
  ASSERT_TRUE(bool(i32));
  EXPECT_EQ(i32->toI32(),
            (std::vector<int32_t>{3, -2, 2147483647, -2147483647 - 1}));

  auto i64 = readNpy(fixture("i64_vec.npy"));
  ASSERT_TRUE(bool(i64));
  EXPECT_EQ(i64->dtype, NpyDtype::I64);
  EXPECT_EQ(i64->toI64(), (std::vector<int64_t>{3, 2, 0, 1}));

  auto scalar = readNpy(fixture("f32_scalar.npy"));
  ASSERT_TRUE(bool(scalar));
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->toF32(), std::vector<float>{2.5f});

  auto empty = readNpy(fixture("f32_empty.npy"));
  ASSERT_TRUE(bool(empty));
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(empty->numElements(), 0u);

  auto rank4 = readNpy(fixture("f32_rank4.npy"));
  ASSERT_TRUE(bool(rank4));
  EXPECT_EQ(rank4->shape, (std::vector<int64_t>{2, 1, 3, 2}));
  std::vector<float> v = rank4->toF32();
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(v[i], float(i));
}

TEST(Npy, ReadsVersion2And3) {
  auto v2 = readNpy(fixture("v2_f32.npy"));
  ASSERT_TRUE(bool(v2)) << llvm::toString(v2.takeError());
  EXPECT_EQ(v2->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v2->toF32()[1], -1.25f);

  auto v3 = readNpy(fixture("v3_i32.npy"));
  ASSERT_TRUE(bool(v3)) << llvm::toString(v3.takeError());
  EXPECT_EQ(v3->toI32(), (std::vector<int32_t>{1, 2, 3, 4}));
}

void expectFileError(const char *file,
                     std::initializer_list<const char *> needles) {
  std::string msg = errorOf(readNpy(fixture(file)));
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  for (const char *n : needles)
    EXPECT_NE(msg.find(n), std::string::npos)
        << "'" << n << "' not in: " << msg;
}

TEST(Npy, RejectsUnsupportedNumPyFiles) {
  expectFileError("fortran_f32.npy", {"Fortran-order", "fortran_order False"});
  expectFileError("big_endian_f32.npy",
                  {"big-endian dtype '>f4'", "expected little-endian"});
  expectFileError("bool.npy", {"dtype '|b1' is not supported"});
  expectFileError("unicode.npy", {"dtype '<U3' is not supported"});
  expectFileError("truncated_f32.npy",
                  {"truncated file: expected 24 data bytes for shape (2, 3) "
                   "<f4, found 19"});
  expectFileError("does_not_exist.npy", {"cannot read .npy file"});
}

// A device or a pipe that never ends is rejected from its first bytes, and
// a .npy larger than the bound is not read to its end (issue 15, item 7:
// both ended in LLVM's out-of-memory abort).
TEST(Npy, ReadsAreBounded) {
  std::string zero = errorOf(readNpy("/dev/zero"));
  EXPECT_NE(zero.find("not a .npy file"), std::string::npos) << zero;
  std::string path = fixture("f32_2x3.npy");
  EXPECT_TRUE(!!readNpy(path, 1 << 20));
  std::string small = errorOf(readNpy(path, 64));
  EXPECT_NE(small.find("is larger than 64 bytes"), std::string::npos) << small;
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

TEST(Npy, HeaderSyntaxVariants) {
  std::string data = floatBytes({1, 2, 3});
  for (const char *header : {
           "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
           "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}",
           "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(3,)}",
           "  {  'fortran_order' :False ,\n 'shape' : ( 3 , ) ,'descr':'<f4',}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}",
       }) {
    auto a = parseNpy(makeNpy(header, data), "h.npy");
    ASSERT_TRUE(bool(a)) << header << ": " << llvm::toString(a.takeError());
    EXPECT_EQ(a->shape, std::vector<int64_t>{3}) << header;
    EXPECT_EQ(a->toF32(), (std::vector<float>{1, 2, 3}));
  }
  auto multi = parseNpy(
      makeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1, 0)}",
              ""),
      "m.npy");
  ASSERT_TRUE(bool(multi));
  EXPECT_EQ(multi->shape, (std::vector<int64_t>{2, 1, 0}));
  auto scalar =
      parseNpy(makeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': ()}",
                       std::string("\x07\0\0\0", 4)),
               "s.npy");
  ASSERT_TRUE(bool(scalar));
  EXPECT_EQ(scalar->toI32(), std::vector<int32_t>{7});
  // Version 2.0 with a hand-made header.
  auto v2 = parseNpy(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
              floatBytes({4}), 2),
      "v2.npy");
  ASSERT_TRUE(bool(v2));
}

void expectParseError(const std::string &bytes,
                      std::initializer_list<const char *> needles) {
  std::string msg = errorOf(parseNpy(bytes, "x.npy"));
  EXPECT_EQ(msg.rfind("x.npy: ", 0), 0u) << msg;
  for (const char *n : needles)
    EXPECT_NE(msg.find(n), std::string::npos)
        << "'" << n << "' not in: " << msg;
}

std::string header(const std::string &shape, const std::string &descr = "<f4",
                   const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

TEST(Npy, RejectsBadMagicAndVersion) {
  expectParseError("", {"not a .npy file", "0-byte file"});
  expectParseError("\x93NUM", {"not a .npy file"});
  expectParseError("PK\x03\x04 this is a zip", {"not a .npy file"});
  expectParseError("\x93NUMPY", {"truncated file", "6 bytes"});
  expectParseError("\x93NUMPY\x01", {"truncated file"});
  expectParseError(std::string("\x93NUMPY\x01\x00\x10", 9),
                   {"truncated file", "header length"});
  std::string good = makeNpy(header("(1,)"), floatBytes({1}));
  std::string v4 = good;
  v4[6] = 4;
  expectParseError(v4, {"format version 4.0 is not supported; expected 1.0, "
                        "2.0 or 3.0"});
  std::string v11 = good;
  v11[7] = 1;
  expectParseError(v11, {"format version 1.1"});
  std::string v0 = good;
  v0[6] = 0;
  expectParseError(v0, {"format version 0.0"});
}

TEST(Npy, RejectsHeaderLengthPastEnd) {
  std::string good = makeNpy(header("(1,)"), floatBytes({1}));
  std::string bad = good;
  bad[8] = char(0xff);
  bad[9] = char(0xff);
  expectParseError(bad, {"truncated file: the header is 65535 bytes"});
  std::string v2 = makeNpy(header("(1,)"), floatBytes({1}), 2);
  v2[11] = char(0x80); // 2 GiB header
  expectParseError(v2, {"truncated file: the header is"});
}

TEST(Npy, RejectsMalformedHeaders) {
  std::string d = floatBytes({1, 2, 3});
  expectParseError(makeNpy("'descr'", d), {"expected the header to start"});
  expectParseError(makeNpy("{'descr': '<f4', 'fortran_order': False", d),
                   {"unexpected end of header"});
  expectParseError(makeNpy("{'descr: '<f4'}", d), {"malformed .npy header"});
  expectParseError(makeNpy(header("(3,)") + " x", d),
                   {"unexpected 'x' after the header dict"});
  expectParseError(makeNpy("{'descr' '<f4'}", d), {"expected ':'"});
  expectParseError(makeNpy("{'descr': '<f4' 'shape': (3,)}", d),
                   {"expected ',' or '}'"});
  expectParseError(makeNpy("{'descr': <f4}", d), {"unexpected '<'"});
  expectParseError(makeNpy("{'descr': '<f4', 'shape': (3.5,)}", d),
                   {"only integer numbers"});
  expectParseError(makeNpy(std::string(200, '(') + ")", d),
                   {"expected the header to start"});
  expectParseError(
      makeNpy("{'a': " + std::string(100, '[') + std::string(100, ']') + "}",
              d),
      {"nested too deeply"});
  expectParseError(makeNpy("{'descr': '<f4', 'fortran_order': False}", d),
                   {"missing key 'shape'"});
  expectParseError(makeNpy("{'shape': (3,), 'fortran_order': False}", d),
                   {"missing key 'descr'"});
  expectParseError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "
              "'extra': 1}",
              d),
      {"unexpected key 'extra'"});
  expectParseError(
      makeNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
              "'shape': (3,)}",
              d),
      {"duplicate key 'descr'"});
  expectParseError(
      makeNpy("{1: '<f4', 'fortran_order': False, 'shape': (3,)}", d),
      {"key 1 is not a string"});
  expectParseError(makeNpy("[1, 2]", d), {"expected the header to start"});
  expectParseError(makeNpy(header("(3,)", "<f4", "0"), d),
                   {"'fortran_order' is 0; expected False"});
  expectParseError(makeNpy(header("(3,)", "<f4", "True"), d),
                   {"Fortran-order arrays are not supported"});
  expectParseError(
      makeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': "
              "(3,)}",
              d),
      {"structured dtype [('a', '<f4')] is not supported"});
  expectParseError(
      makeNpy("{'descr': 4, 'fortran_order': False, 'shape': (3,)}", d),
      {"'descr' is 4; expected a dtype string"});
  expectParseError(makeNpy("{'descr': '<f4", d), {"unterminated string"});
}

TEST(Npy, RejectsUnsupportedDtypes) {
  std::string d = floatBytes({1, 2, 3});
  for (const char *descr :
       {"|b1", "<U3", "|u1", "<u4", "=f4", "f4", "|f4", "<c8", "O", "<V4"})
    expectParseError(makeNpy(header("(3,)", descr), d),
                     {(std::string("dtype '") + descr +
                       "' is not supported; expected '<f4', '<V2', '<f2', "
                       "'<i4', '<i8', '<u2' or '<f8'")
                          .c_str()});
  expectParseError(makeNpy(header("(3,)", ">i8"), d),
                   {"big-endian dtype '>i8' is not supported"});
}

TEST(Npy, RejectsBadShapes) {
  std::string d = floatBytes({1, 2, 3});
  expectParseError(makeNpy(header("[3]"), d),
                   {"'shape' is [3]; expected a tuple"});
  expectParseError(makeNpy(header("(3)"), d),
                   {"'shape' is (3); expected a tuple"});
  expectParseError(makeNpy(header("3"), d), {"'shape' is 3"});
  expectParseError(makeNpy(header("(-3,)"), d),
                   {"negative dimension -3", "expected non-negative"});
  expectParseError(makeNpy(header("(3, 'a')"), d), {"has the entry 'a'"});
  expectParseError(makeNpy(header("(99999999999999999999999,)"), d),
                   {"99999999999999999999999, which is too large"});
  expectParseError(makeNpy(header("(4294967296, 4294967296, 4)"), d),
                   {"is too large"});
  expectParseError(makeNpy(header("(9223372036854775807,)"), d),
                   {"is too large"});
  // 2^62 elements of 4 bytes wrap around to 0 bytes in 64-bit arithmetic.
  expectParseError(makeNpy(header("(4611686018427387904,)"), ""),
                   {"is too large"});
  std::string many = "(";
  for (int i = 0; i < 70; ++i)
    many += "1, ";
  many += ")";
  expectParseError(makeNpy(header(many), floatBytes({1})),
                   {"70 dimensions; expected at most 64"});
  // A zero dimension makes an empty array even with a huge other dimension.
  auto zero =
      parseNpy(makeNpy(header("(0, 9223372036854775807)"), ""), "z.npy");
  ASSERT_TRUE(bool(zero));
  EXPECT_EQ(zero->numElements(), 0u);
}

TEST(Npy, RejectsDataSizeMismatch) {
  expectParseError(makeNpy(header("(2, 2)"), floatBytes({1, 2, 3})),
                   {"truncated file: expected 16 data bytes for shape (2, 2) "
                    "<f4, found 12"});
  expectParseError(makeNpy(header("(2,)"), floatBytes({1, 2, 3})),
                   {"4 trailing bytes", "expected 8 data bytes"});
  expectParseError(makeNpy(header("()"), ""), {"expected 4 data bytes"});
}

TEST(Npy, EveryPrefixAndCorruptionFailsCleanly) {
  std::string good = fileBytes(fixture("f32_2x3.npy"));
  ASSERT_TRUE(bool(parseNpy(good, "good.npy")));
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = parseNpy(llvm::StringRef(good.data(), n), "p.npy");
    EXPECT_FALSE(bool(r)) << "prefix of " << n << " bytes";
    if (!r)
      llvm::consumeError(r.takeError());
  }
  std::mt19937 rng(42);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string bad = good;
    int flips = 1 + rng() % 4;
    for (int i = 0; i < flips; ++i)
      bad[rng() % (good.size() - 24)] = char(rng());
    auto r = parseNpy(bad, "c.npy");
    if (!r)
      llvm::consumeError(r.takeError());
    else
      EXPECT_EQ(r->data.size(), r->numElements() * npyDtypeSize(r->dtype));
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST_F(NpyFile, WriteIsAtomicAndOverwrites) {
  std::string file = path("out.npy");
  ASSERT_FALSE(bool(writeNpy(file, NpyArray::fromF32({1}, {1.0f}))));
  ASSERT_FALSE(bool(writeNpy(file, NpyArray::fromI32({2}, {5, 6}))));
  auto r = readNpy(file);
  ASSERT_TRUE(bool(r));
  EXPECT_EQ(r->toI32(), (std::vector<int32_t>{5, 6}));
  // No temporary file is left behind.
  std::error_code ec;
  int count = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    ++count;
  EXPECT_EQ(count, 1);
}

TEST_F(NpyFile, WriteErrorsNameTheFile) {
  std::string file = path("missing_dir/out.npy");
  llvm::Error e = writeNpy(file, NpyArray::fromF32({1}, {1.0f}));
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  NpyArray bad;
  bad.shape = {3};
  e = writeNpy(path("bad.npy"), bad);
  ASSERT_TRUE(bool(e));
  msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find("bad.npy"), std::string::npos) << msg;
  EXPECT_FALSE(llvm::sys::fs::exists(path("bad.npy")));
}

//===----------------------------------------------------------------------===//
// narrowToI32
//===----------------------------------------------------------------------===//

TEST(Npy, NarrowToI32) {
  auto wide = readNpy(fixture("i64_vec.npy"));
  ASSERT_TRUE(bool(wide));
  auto narrow = narrowToI32(*wide, "valid_lens");
  ASSERT_TRUE(bool(narrow));
  EXPECT_EQ(narrow->dtype, NpyDtype::I32);
  EXPECT_EQ(narrow->shape, wide->shape);
  EXPECT_EQ(narrow->toI32(), (std::vector<int32_t>{3, 2, 0, 1}));

  auto same = narrowToI32(NpyArray::fromI32({1}, {9}), "v");
  ASSERT_TRUE(bool(same));
  EXPECT_EQ(same->toI32(), std::vector<int32_t>{9});

  auto edge =
      narrowToI32(NpyArray::fromI64({2}, {-2147483648LL, 2147483647LL}), "v");
  ASSERT_TRUE(bool(edge));

  auto big = readNpy(fixture("i64_big.npy"));
  ASSERT_TRUE(bool(big));
  std::string msg = errorOf(narrowToI32(*big, "valid_lens"));
  EXPECT_NE(msg.find("valid_lens: value 2147483648 at flat index 2 does not "
                     "fit in int32"),
            std::string::npos)
      << msg;
  msg = errorOf(
      narrowToI32(NpyArray::fromI64({3}, {0, -2147483649LL, 5}), "ids"));
  EXPECT_NE(msg.find("ids: value -2147483649 at flat index 1"),
            std::string::npos)
      << msg;
  msg = errorOf(narrowToI32(NpyArray::fromF32({1}, {1.0f}), "ids"));
  EXPECT_NE(msg.find("ids: expected an integer array ('<i4' or '<i8'), found "
                     "'<f4'"),
            std::string::npos)
      << msg;
}

} // namespace
