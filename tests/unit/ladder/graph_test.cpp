// The contract DAG from `depends` lines: renderers and the --affected set.
#include <gtest/gtest.h>

#include "kc/engine.h"
#include "kc/graph.h"
#include "kc/lang.h"

namespace kc::graph {
namespace {

Graph shipped() {
  auto loaded = engine::load_contracts({std::string(KC_SOURCE_DIR) + "/contracts"});
  EXPECT_TRUE(lang::resolve_depends(loaded.contracts).empty());
  return build_graph(loaded.contracts, loaded.files);
}

TEST(ContractGraph, MermaidDotAndJsonShowDependencyEdges) {
  const Graph g = shipped();
  const std::string m = render_mermaid(g);
  EXPECT_EQ(m.rfind("graph TD\n", 0), 0u);
  EXPECT_NE(m.find("  KC_GEMM_01 --> C_CMP_01\n"), std::string::npos) << m;
  EXPECT_NE(m.find("  C_PRC_01 --> INC_COERCE_01\n"), std::string::npos) << m;
  const std::string d = render_dot(g);
  EXPECT_NE(d.find("\"C-CMP-03\" -> \"INC-REWARD-01\";"), std::string::npos) << d;
  const std::string j = render_json(g);
  EXPECT_NE(j.find("\"from\": \"C-EXC-02\",\n      \"to\": \"INC-OOB-01\""), std::string::npos) << j;
}

TEST(ContractGraph, AffectedIsTheContractAndEverythingDownstreamInOrder) {
  const Graph g = shipped();
  EXPECT_EQ(affected(g, "KC-GEMM-01"),
            (std::vector<std::string>{"KC-GEMM-01", "C-CMP-01", "C-CMP-03", "INC-REWARD-01", "KC-GEMM-04",
                                      "KC-GEMM-05"}));
  EXPECT_EQ(affected(g, "C-CMP-03"), (std::vector<std::string>{"C-CMP-03", "INC-REWARD-01"}));
  EXPECT_EQ(affected(g, "KC-RED-01"), (std::vector<std::string>{"KC-RED-01"}));
  EXPECT_TRUE(affected(g, "KC-NOPE-01").empty());
}

}  // namespace
}  // namespace kc::graph
