// The canonical form (ir/leir/canonical.h): the edits it undoes give one hash, every other edit —
// one that can change a value or the lowering — another.
#include <gtest/gtest.h>

#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"

using namespace steptp::leir;

namespace {

const char* kSig = "name mm\ninput A: f64[8,16]\ninput C: f64[16,12]\noutput D: f64[8,12]\n";

uint64_t hash_of(const std::string& body, const std::string& sig = kSig) {
  return canonical_hash(program_from_text(sig + body));
}

const std::string kMatmul = "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";

TEST(Canonical, NoOpEditsShareTheHash) {
  const uint64_t h = hash_of(kMatmul);
  // Loop variables renamed.
  EXPECT_EQ(h, hash_of("B^{8}_{i=0}L^{12}_{j=0}L^{16}_{k=0}[D^{f64,g}_{i,j}=D^{f64,g}_{i,j}+A^{f64,g}_{i,k}*C^{f64,g}_{k,j};];"));
  // Commuted operands (product and sum).
  EXPECT_EQ(h, hash_of("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+C^{f64,g}_{c,a}*A^{f64,g}_{tx,c};];"));
  EXPECT_EQ(h, hash_of("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}+D^{f64,g}_{tx,a};];"));
  // Identities: +0, 0+, -0, *1, 1*, /1, in values and in subscripts, with redundant parentheses.
  EXPECT_EQ(h, hash_of("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=(D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a})+0;];"));
  EXPECT_EQ(h, hash_of("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=0.0+D^{f64,g}_{tx,a}+1*A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}/1;];"));
  EXPECT_EQ(h, hash_of("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c+0}*C^{f64,g}_{c*1,a}-0;];"));
  // Declaration order and the program's name.
  EXPECT_EQ(h, hash_of(kMatmul, "name other\noutput D: f64[8,12]\ninput C: f64[16,12]\ninput A: f64[8,16]\n"));
}

TEST(Canonical, IntermediatesAreRenamedKnownTensorsAreNot) {
  const std::string sig = "input A: f64[8]\noutput B: f64[8]\n";
  const uint64_t h = hash_of("L^{8}_{i=0}[T^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{8}_{i=0}[B^{f64,g}_{i}=T^{f64,g}_{i}+1;];", sig);
  EXPECT_EQ(h, hash_of("L^{8}_{i=0}[Q^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{8}_{j=0}[B^{f64,g}_{j}=1+Q^{f64,g}_{j};];", sig));
  // Two intermediates swapped in name keep their roles (numbered where first written).
  const std::string two = "L^{8}_{i=0}[T^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{8}_{i=0}[U^{f64,g}_{i}=A^{f64,g}_{i}*3;];"
                          "L^{8}_{i=0}[B^{f64,g}_{i}=T^{f64,g}_{i}-U^{f64,g}_{i};];";
  const std::string swapped = "L^{8}_{i=0}[U^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{8}_{i=0}[T^{f64,g}_{i}=A^{f64,g}_{i}*3;];"
                              "L^{8}_{i=0}[B^{f64,g}_{i}=U^{f64,g}_{i}-T^{f64,g}_{i};];";
  EXPECT_EQ(hash_of(two, sig), hash_of(swapped, sig));
  // ... while using them the other way round is another program.
  const std::string other = "L^{8}_{i=0}[T^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{8}_{i=0}[U^{f64,g}_{i}=A^{f64,g}_{i}*3;];"
                            "L^{8}_{i=0}[B^{f64,g}_{i}=U^{f64,g}_{i}-T^{f64,g}_{i};];";
  EXPECT_NE(hash_of(two, sig), hash_of(other, sig));
}

TEST(Canonical, EditsThatCanChangeValuesOrLoweringDiffer) {
  const std::string sig = "input A: f64[8]\ninput C: f64[8]\noutput B: f64[8]\n";
  auto h = [&](const std::string& rhs, const std::string& loop = "L") {
    return hash_of(loop + "^{8}_{i=0}[B^{f64,g}_{i}=" + rhs + ";];", sig);
  };
  const uint64_t base = h("A^{f64,g}_{i}+C^{f64,g}_{i}+1");
  EXPECT_EQ(base, h("C^{f64,g}_{i}+A^{f64,g}_{i}+1"));
  EXPECT_NE(base, h("A^{f64,g}_{i}+(C^{f64,g}_{i}+1)")) << "reassociated: f64 rounding may differ";
  EXPECT_NE(base, h("A^{f64,g}_{i}+C^{f64,g}_{i}+1", "P")) << "another loop kind lowers differently";
  EXPECT_NE(h("A^{f64,g}_{i}*0"), h("0")) << "x*0 is NaN for x = inf or NaN";
  EXPECT_NE(h("A^{f64,g}_{i}-A^{f64,g}_{i}"), h("0"));
  EXPECT_NE(h("A^{f64,g}_{i}-C^{f64,g}_{i}"), h("C^{f64,g}_{i}-A^{f64,g}_{i}"));
  EXPECT_NE(h("0-A^{f64,g}_{i}"), h("A^{f64,g}_{i}"));
  EXPECT_EQ(h("max(A^{f64,g}_{i},C^{f64,g}_{i})"), h("max(C^{f64,g}_{i},A^{f64,g}_{i})"));
  EXPECT_EQ(h("A^{f64,g}_{i}==C^{f64,g}_{i}"), h("C^{f64,g}_{i}==A^{f64,g}_{i}"));
  EXPECT_NE(h("A^{f64,g}_{i}<C^{f64,g}_{i}"), h("C^{f64,g}_{i}<A^{f64,g}_{i}"));
  EXPECT_NE(h("A^{f64,g}_{i}/2"), h("A^{f64,g}_{i}"));
}

}  // namespace
