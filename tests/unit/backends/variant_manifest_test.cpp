// The variant loader's manifest (variants.tsv) and CPU feature names.
#include <gtest/gtest.h>

#include "../../../backends/variants/variant_backend.h"

namespace kc::backends {
namespace {

TEST(VariantManifest, ParsesLinesSkippingCommentsAndBlanks) {
  auto v = parse_variant_manifest(
      "# label\tlibrary\tcpu\tcompiler\tflags\tnote\n"
      "\n"
      "sse2\tlibkc_eigen_sse2.so\t-\tc++\t-O2 -DNDEBUG\tbaseline\n"
      "avx2\tlibkc_eigen_avx2.so\tavx,avx2,fma\tc++\t-O2 -mavx2 -mfma\t\n");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].label, "sse2");
  EXPECT_TRUE((*v)[0].cpu_features.empty());
  EXPECT_EQ((*v)[0].flags, "-O2 -DNDEBUG");
  EXPECT_EQ((*v)[1].cpu_features, (std::vector<std::string>{"avx", "avx2", "fma"}));
  EXPECT_EQ((*v)[1].note, "");
}

TEST(VariantManifest, RejectsMalformedLinesWithTheLineNumber) {
  auto short_line = parse_variant_manifest("# c\nsse2\tlib.so\t-\n");
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.status().message().find("line 2"), std::string::npos) << short_line.status().message();
  EXPECT_FALSE(parse_variant_manifest("a\tx.so\t-\tc++\t-O2\tn\na\ty.so\t-\tc++\t-O3\tn\n").ok());  // duplicate
  EXPECT_FALSE(parse_variant_manifest("a.b\tx.so\t-\tc++\t-O2\tn\n").ok());  // '.' splits impl names
  EXPECT_FALSE(parse_variant_manifest("# only comments\n").ok());
}

TEST(VariantManifest, CpuFeatureNames) {
  auto sse2 = cpu_has("sse2");
  ASSERT_TRUE(sse2.ok());
  EXPECT_TRUE(*sse2) << "every x86-64 CPU has SSE2";
  EXPECT_FALSE(cpu_has("avx1024").ok());
}

}  // namespace
}  // namespace kc::backends
