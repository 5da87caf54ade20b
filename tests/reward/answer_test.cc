// The answer parser: the forms the dataset teaches, and every way an answer can be malformed
// (each a result with its reason, never an exception).
#include <gtest/gtest.h>

#include "apps/reward/answer.h"
#include "transform/trace.h"

namespace steptp::reward {
namespace {

TEST(Answer, IrForm) {
  auto a = parse_answer(
      "<think>a\nb</think>\n<answer>{\"strategy\":\"loop_split\",\"params\":{\"factor\":4},\"transformed_IR\":\"x\"}</answer>");
  ASSERT_TRUE(a.ok) << a.reason;
  EXPECT_FALSE(a.list);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].form, AnswerStep::Form::IR);
  EXPECT_EQ(a.steps[0].strategy, "loop_split");
  EXPECT_EQ((*a.steps[0].params)["factor"], 4);
  EXPECT_EQ(a.steps[0].ir, "x");
}

TEST(Answer, ActionFormAcceptsIndexOrSiteObject) {
  auto a = parse_answer("<answer>{\"strategy\":\"loop_unrolling\",\"site\":2}</answer>");
  ASSERT_TRUE(a.ok) << a.reason;
  EXPECT_EQ(a.steps[0].form, AnswerStep::Form::Action);
  EXPECT_EQ(*a.steps[0].site, 2);
  EXPECT_FALSE(a.steps[0].params.has_value());
  auto b = parse_answer("<answer>{\"strategy\":\"s\",\"site\":{\"index\":1,\"path\":[0]},\"params\":{}}</answer>");
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_EQ(*b.steps[0].site, 1);
}

TEST(Answer, ChoiceFormNamesAMenuOptionAlone) {
  auto a = parse_answer("<answer>{\"choice\": 7}</answer>");
  ASSERT_TRUE(a.ok) << a.reason;
  EXPECT_EQ(a.steps[0].form, AnswerStep::Form::Choice);
  EXPECT_EQ(*a.steps[0].choice, 7);
  EXPECT_EQ(to_string(a.steps[0].form), "choice");
  auto list = parse_answer("<answer>[{\"choice\":1},{\"choice\":12}]</answer>");
  ASSERT_TRUE(list.ok) << list.reason;
  EXPECT_TRUE(list.list);
  EXPECT_EQ(*list.steps[1].choice, 12);
  for (const char* bad : {"{\"choice\":0}", "{\"choice\":-3}", "{\"choice\":\"4\"}", "{\"choice\":2.5}",
                          "{\"choice\":3,\"strategy\":\"loop_split\"}"}) {
    auto b = parse_answer(std::string("<answer>") + bad + "</answer>");
    EXPECT_FALSE(b.ok) << bad;
    EXPECT_NE(b.reason.find("choice"), std::string::npos) << bad << ": " << b.reason;
  }
}

TEST(Answer, ActionFormAcceptsSiteHandles) {
  auto a = parse_answer("<answer>{\"strategy\":\"loop_tiling\",\"site\":\"@0/1.2\"}</answer>");
  ASSERT_TRUE(a.ok) << a.reason;
  EXPECT_EQ(a.steps[0].form, AnswerStep::Form::Action);
  EXPECT_FALSE(a.steps[0].site.has_value());
  EXPECT_EQ(a.steps[0].site_handle, "@0/1.2");
  for (const char* bad : {"\"0/1\"", "\"@0//1\"", "\"@0.\"", "\"@x\"", "\"@0#\""}) {
    auto b = parse_answer(std::string("<answer>{\"strategy\":\"s\",\"site\":") + bad + "}</answer>");
    EXPECT_FALSE(b.ok) << bad;
    EXPECT_NE(b.reason.find("site handle"), std::string::npos) << b.reason;
  }
  // The handle is transform/trace.h's site address, both ways.
  using strategies::SiteAddress;
  for (const SiteAddress& s : {SiteAddress{}, SiteAddress{{0}, {}, 0}, SiteAddress{{2, 1}, {0, 3}, 1}}) {
    auto back = strategies::parse_handle(strategies::to_handle(s));
    ASSERT_TRUE(back) << strategies::to_handle(s);
    EXPECT_EQ(*back, s) << strategies::to_handle(s);
  }
  EXPECT_EQ(strategies::to_handle({{2, 1}, {0, 3}, 1}), "@2.1/0.3#1");
}

TEST(Answer, ListAndLastAnswerTagCounts) {
  auto a = parse_answer(
      "<think>the format is <answer>{}</answer></think><answer>[{\"transformed_IR\":\"p\"},"
      "{\"strategy\":\"s\",\"site\":0}]</answer> trailing");
  ASSERT_TRUE(a.ok) << a.reason;
  EXPECT_TRUE(a.list);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[1].form, AnswerStep::Form::Action);
}

TEST(Answer, MalformedAnswersHaveReasons) {
  struct Case {
    const char* text;
    const char* reason_part;
  } cases[] = {
      {"just text", "no <answer> tag"},
      {"<answer>{\"transformed_IR\":\"p\"}", "not closed"},
      {"<answer>{\"transformed_IR\": }</answer>", "answer JSON"},
      {"<answer>[]</answer>", "empty list"},
      {"<answer>42</answer>", "JSON object"},
      {"<answer>{\"strategy\":\"s\"}</answer>", "needs \"transformed_IR\""},
      {"<answer>{\"transformed_IR\":\"  \"}</answer>", "empty"},
      {"<answer>{\"transformed_IR\":7}</answer>", "must be a string"},
      {"<answer>{\"site\":1}</answer>", "needs \"strategy\""},
      {"<answer>{\"strategy\":\"s\",\"site\":-1}</answer>", "non-negative"},
      {"<answer>{\"strategy\":\"s\",\"site\":0,\"transformed_IR\":\"p\"}</answer>", "not both"},
      {"<answer>{\"strategy\":\"s\",\"site\":0,\"params\":[1]}</answer>", "\"params\" must be"},
      {"<answer>[{\"transformed_IR\":\"p\"}, 3]</answer>", "answer item 1"},
  };
  for (const auto& c : cases) {
    auto a = parse_answer(c.text);
    EXPECT_FALSE(a.ok) << c.text;
    EXPECT_NE(a.reason.find(c.reason_part), std::string::npos) << c.text << " -> " << a.reason;
  }
}

TEST(Answer, JsonErrorSaysWhere) {
  auto a = parse_answer("<answer>{\"transformed_IR\": \"a\",\n \"x\" 1}</answer>");
  ASSERT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("line 2"), std::string::npos) << a.reason;
}

TEST(Answer, RunawayAnswerIsRefused) {
  std::string big = "<answer>{\"transformed_IR\":\"" + std::string(kMaxAnswerBytes, 'x') + "\"}</answer>";
  auto a = parse_answer(big);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("longer than"), std::string::npos);
}

}  // namespace
}  // namespace steptp::reward
