// `generate --answer-format action`: a record's action answer, applied by the reward's parser
// (the one `optimize` uses), gives exactly the record's result program; and its prompt lists
// that site's handle (the prompt `optimize` sends); its keys come in decision order.
// `--answer-format choice`: the answer names the number of a menu option the prompt lists, and
// the reward resolves it to the same step.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "apps/dataset/dataset.h"
#include "ir/leir/program_io.h"
#include "apps/reward/reward.h"

using nlohmann::json;

namespace steptp::dataset {
namespace {

json two_nest_records() {
  Root r{"u/0", "user",
         leir::program_from_text("name two\ninput A: f64[4,8]\noutput C: f64[4,8]\n"
                                 "B^{4}_{tx=0}L^{8}_{a=0}[D^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];"
                                 "B^{4}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}*D^{f64,g}_{tx,a};];\n")};
  GenerateOptions o;
  o.mode = search::Mode::Greedy;
  o.depth = 1;
  return root_records(r, o);
}

TEST(ActionRecords, AnswersReplayToTheRecordsResult) {
  json recs = two_nest_records();
  int checked = 0;
  for (const auto& rec : recs) {
    if (rec["kind"] != "single") continue;
    json chat = make_chat(rec, AnswerFormat::Action);
    std::string user = chat["messages"][1]["content"], asst = chat["messages"][2]["content"];
    // Keys in decision order: the strategy before the site listed under it, the parameters last.
    const size_t answer = asst.rfind("<answer>");
    ASSERT_NE(answer, std::string::npos);
    EXPECT_EQ(asst.substr(answer, 21), "<answer>{\"strategy\":\"") << asst.substr(answer);
    EXPECT_LT(asst.find("\"site\":", answer), asst.find("\"params\":", answer)) << asst.substr(answer);
    std::string ir_asst = make_chat(rec, AnswerFormat::IR)["messages"][2]["content"];
    EXPECT_NE(ir_asst.find("<answer>{\"strategy\":"), std::string::npos) << ir_asst;
    auto parsed = reward::parse_answer(asst);
    ASSERT_TRUE(parsed.ok) << parsed.reason;
    const auto& step = parsed.steps.front();
    ASSERT_EQ(step.form, reward::AnswerStep::Form::Action);
    EXPECT_NE(user.find(step.site_handle), std::string::npos) << "the prompt does not list " << step.site_handle;
    leir::Program parent = leir::program_from_text(rec["parent_program"].get<std::string>());
    auto cand = reward::candidate_program(parent, step);
    ASSERT_TRUE(cand.program) << cand.error;
    EXPECT_EQ(leir::program_to_text(*cand.program), rec["answers"][0]["result_program"].get<std::string>());
    checked++;
  }
  EXPECT_GE(checked, 3);
}

TEST(ChoiceRecords, AnswersNameANumberedOptionThatReplaysToTheRecordsResult) {
  int checked = 0;
  for (const auto& rec : two_nest_records()) {
    if (rec["kind"] != "single") continue;
    json chat = make_chat(rec, AnswerFormat::Choice);
    std::string user = chat["messages"][1]["content"], asst = chat["messages"][2]["content"];
    auto parsed = reward::parse_answer(asst);
    ASSERT_TRUE(parsed.ok) << parsed.reason;
    const auto& step = parsed.steps.front();
    ASSERT_EQ(step.form, reward::AnswerStep::Form::Choice) << asst;
    const leir::Program parent = leir::program_from_text(rec["parent_program"].get<std::string>());
    const auto options = choice_options(parent);
    // The loop schedule's strategies come first: the first option is a vectorization when the
    // program has a loop to vectorize.
    const auto menu = action_menu(parent);
    if (std::any_of(menu.begin(), menu.end(), [](const MenuSite& m) { return m.strategy == "loop_vectorization"; }))
      EXPECT_EQ(options.front().strategy, "loop_vectorization");
    // The prompt numbers exactly the options the reward resolves against, the last one last.
    EXPECT_NE(user.find(fmt::format("[{}] ", options.size())), std::string::npos);
    EXPECT_EQ(user.find(fmt::format("[{}] ", options.size() + 1)), std::string::npos);
    EXPECT_NE(user.find(fmt::format("[{}] ", *step.choice)), std::string::npos);
    auto action = reward::choice_action(parent, step);
    ASSERT_TRUE(action);
    EXPECT_EQ(action->strategy, rec["answers"][0]["strategy"].get<std::string>());
    auto cand = reward::candidate_program(parent, step);
    ASSERT_TRUE(cand.program) << cand.error;
    EXPECT_EQ(leir::program_to_text(*cand.program), rec["answers"][0]["result_program"].get<std::string>());
    // A number the menu does not have is an invalid step, with the menu's size in the reason.
    reward::AnswerStep beyond = step;
    beyond.choice = int(options.size()) + 1;
    auto none = reward::candidate_program(parent, beyond);
    EXPECT_FALSE(none.program);
    EXPECT_NE(none.error.find(fmt::format("among the {} numbered options", options.size())), std::string::npos)
        << none.error;
    checked++;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace steptp::dataset
