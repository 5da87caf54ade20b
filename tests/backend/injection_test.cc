// No input text reaches generated source other than as a checked identifier (issue #33: a JSON
// program name with a newline compiled and ran attacker C++). A battery of hostile strings goes
// through every string field of both program forms: the reader rejects it with a LeirError, or
// (aliases, which are free text) accepts it and no CPU, CUDA or TIR source contains it. Programs
// built in C++, past every reader, are refused by each generator itself.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/program_io.h"

namespace steptp::backend {
namespace {

using leir::LeirError;
using leir::Program;

std::vector<std::string> hostile_strings() {
  return {"x\nint main(){}",
          "x */ __attribute__((constructor)) void f(){system(\"id\");} /*",
          "x\\",
          "x\"y",
          "x'y",
          "#include <cstdlib>",
          std::string("x\0y", 3),
          "x\xc3\xa9\xe2\x80\x8b",  // é and a zero-width space
          std::string(100000, 'q') + "\n;",
          "x\r\n#define t_A system",
          "x}{",
          "x\n    import os; os.system('id')",
          "x`id`$(id)",
          "\x1b[31mx",
          "x y",
          "A[0] = 1;",
          "a=0}"};
}

// One valid program with a placeholder for each field; every backend lowers it.
struct Fields {
  std::string name = "scale", input = "A", output = "C", var = "a", alias = "gemm.weight", role = "input",
              dtype = "f64";
};

std::string body(const Fields& f) {
  return "B^{4}_{tx=0}L^{3}_{" + f.var + "=0}[" + f.output + "^{f64,g}_{tx}=" + f.output + "^{f64,g}_{tx}+" + f.input +
         "^{f64,g}_{tx," + f.var + "};];";
}

std::string text_form(const Fields& f) {
  // Written as an attacker would: the alias pasted between quotes, unescaped.
  return "name " + f.name + "\n" + f.role + " " + f.input + ": " + f.dtype + "[4,3] as \"" + f.alias + "\"\noutput " +
         f.output + ": f64[4]\n" + body(f) + "\n";
}

nlohmann::json json_form(const Fields& f) {
  return {{"name", f.name},
          {"known",
           {{{"name", f.input}, {"role", f.role}, {"dtype", f.dtype}, {"shape", {4, 3}}, {"alias", f.alias}},
            {{"name", f.output}, {"role", "output"}, {"dtype", "f64"}, {"shape", {4}}}}},
          {"leir", body(f)}};
}

using Plant = std::function<void(Fields&, const std::string&)>;
const std::vector<std::pair<std::string, Plant>>& fields() {
  static const std::vector<std::pair<std::string, Plant>> all = {
      {"name", [](Fields& f, const std::string& h) { f.name = h; }},
      {"input name", [](Fields& f, const std::string& h) { f.input = h; }},
      {"output name", [](Fields& f, const std::string& h) { f.output = h; }},
      {"loop variable", [](Fields& f, const std::string& h) { f.var = h; }},
      {"alias", [](Fields& f, const std::string& h) { f.alias = h; }},
      {"role", [](Fields& f, const std::string& h) { f.role = h; }},
      {"dtype", [](Fields& f, const std::string& h) { f.dtype = h; }},
  };
  return all;
}

// Every source the backends generate for `p` (those that reject it add nothing).
std::vector<std::string> sources(const Program& p) {
  std::vector<std::string> out;
  auto attempt = [&](const std::function<std::string()>& emit) {
    try {
      out.push_back(emit());
    } catch (const LeirError&) {
    }
  };
  attempt([&] { return cpu::generate_cpu_kernel(p).code; });
  attempt([&] { return cpu::generate_cpu_kernel(p, {.all_f64 = true}).code; });
  attempt([&] { return cuda::generate_cuda(p).code; });
  attempt([&] { return tir::emit_tvmscript(p); });
  attempt([&] { return tir::emit_tvmscript(p, {.dialect = tir::TirDialect::Legacy, .cpu_compatible = true}); });
  return out;
}

TEST(Injection, TheUnplantedProgramLowersEverywhere) {
  Fields f;
  EXPECT_EQ(sources(leir::program_from_text(text_form(f), "p.leir")).size(), 5u);
  EXPECT_EQ(sources(leir::program_from_json(json_form(f), "p.json")).size(), 5u);
}

TEST(Injection, HostileTextInEveryFieldOfBothFormsIsRejectedOrNeverEmitted) {
  int rejected = 0, accepted = 0;
  for (const auto& [field, plant] : fields()) {
    for (const auto& h : hostile_strings()) {
      Fields f;
      plant(f, h);
      const bool free_text = field == "alias";
      const std::pair<std::string, std::function<Program()>> forms[] = {
          {"text", [&] { return leir::program_from_text(text_form(f), "p.leir"); }},
          {"json", [&] { return leir::program_from_json(json_form(f), "p.json"); }},
      };
      for (const auto& [form, read] : forms) {
        const std::string what = form + " form, " + field + " = " + leir::quote_text(h);
        std::optional<Program> p;
        try {
          p = read();
        } catch (const LeirError& e) {
          ++rejected;
          EXPECT_GT(e.loc().line, 0u) << what << ": " << e.what();
          continue;
        }
        ++accepted;
        // Only free text is kept as given; the text form may read other text as its own syntax (a
        // '#' starts a comment) but never as a name.
        bool kept = p->name == h;
        for (const auto& d : p->known) kept |= d.name == h || d.alias == h;
        if (!free_text) {
          EXPECT_FALSE(kept) << what << " was accepted as given";
        } else if (form == "json") {
          EXPECT_TRUE(kept) << what;
        }
        auto srcs = sources(*p);
        if (kept) {
          EXPECT_EQ(srcs.size(), 5u) << what;
        }
        for (const auto& src : srcs) EXPECT_EQ(src.find(h), std::string::npos) << what << " reached:\n" << src;
      }
    }
  }
  // Aliases without control characters are kept; everything else is refused.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, accepted);
}

// Renames tensor `from` to `to` and loop variable `vfrom` to `vto` throughout a body.
std::vector<leir::Item> renamed(const std::vector<leir::Item>& body, const std::string& from, const std::string& to,
                                const std::string& vfrom, const std::string& vto) {
  std::vector<leir::Item> out = leir::map_exprs(body, [&](const leir::ExprPtr& e) {
    struct R : leir::ExprMutator {
      const std::string &from, &to, &vfrom, &vto;
      R(const std::string& a, const std::string& b, const std::string& c, const std::string& d)
          : from(a), to(b), vfrom(c), vto(d) {}
      leir::ExprPtr visit_access(const leir::ExprPtr& x) override {
        auto m = std::make_shared<leir::Expr>(*mutate_children(x));
        if (m->tensor == from) m->tensor = to;
        return m;
      }
      leir::ExprPtr visit_var(const leir::ExprPtr& x) override {
        if (x->var_name() != vfrom) return x;
        return leir::make_var(vto, x->loc);
      }
    } r(from, to, vfrom, vto);
    return r.mutate(e);
  });
  std::function<void(std::vector<leir::Item>&)> loops = [&](std::vector<leir::Item>& items) {
    for (auto& it : items) {
      if (!it.is_nest()) continue;
      for (auto& l : it.nest.loops)
        if (l.var == vfrom) l.var = vto;
      loops(it.nest.body);
    }
  };
  loops(out);
  return out;
}

TEST(Injection, GeneratorsRefuseProgramsBuiltPastTheReaders) {
  const Program ok = leir::program_from_text(text_form(Fields{}), "p.leir");
  for (const auto& h : hostile_strings()) {
    std::vector<std::pair<std::string, Program>> built;
    Program p = ok;
    p.name = h;
    built.emplace_back("program name", p);
    p = ok;
    p.known[0].name = h;
    p.body = renamed(ok.body, "A", h, "a", "a");
    built.emplace_back("tensor name", p);
    p = ok;
    p.body = renamed(ok.body, "A", "A", "a", h);
    built.emplace_back("loop variable", p);
    for (const auto& [field, prog] : built) {
      auto expect_refused = [&, field = field](const char* target, const std::function<void()>& emit) {
        try {
          emit();
          ADD_FAILURE() << target << " emitted a " << field << " " << leir::quote_text(h);
        } catch (const LeirError& e) {
          EXPECT_NE(e.message().find(field), std::string::npos) << target << ": " << e.what();
        }
      };
      expect_refused("cpu", [&, &prog = prog] { cpu::generate_cpu_kernel(prog); });
      expect_refused("cuda", [&, &prog = prog] { cuda::generate_cuda(prog); });
      expect_refused("tir", [&, &prog = prog] { tir::emit_tvmscript(prog); });
    }
  }
  EXPECT_THROW(cuda::generate_cuda(ok, "main(){}//"), LeirError);
}

}  // namespace
}  // namespace steptp::backend
