// 40 and 41 differ in what they rewrite. 40 fuses the two reductions only: the one pass stands
// where the sum was and the statistics stay global per-row tensors that whatever follows reads.
// 41 rewrites all three nests of the softmax: the normalization (the first later reader of the
// statistics; it must read both, where they are written) moves into the max nest's loops outside
// k, right after their pass, so each row's normalization reads what the fused pass just produced
// for that row (the online softmax kernel: per row, one pass for the statistics, one for the
// output; a softmax over a middle axis shares the loops outside it, over the first axis none).
//
// One class serves both (Mode): they match the max and the sum alike, build the same one pass and
// differ only in whether the normalization is matched and moved too; two classes would write the
// matching, the survey and the apply twice. Each strategy's own file registers the class in its
// mode (SumOnlySoftmax: prefix_sum_on_exp.cc, OnlineSoftmax: online_softmax.cc).
#pragma once

#include <string>
#include <string_view>

#include "transform/softmax/softmax_patterns.h"
#include "transform/strategy.h"

namespace steptp::strategies::softmax {

// ---- 40 / 41: max + sum-of-exp (+ normalize) --------------------------------------------------

enum class Mode { SumOnly, OnlineSoftmax };

class PrefixSoftmax : public Strategy {
 public:
  explicit PrefixSoftmax(Mode mode) : mode_(mode) {}
  std::string_view name() const override {
    return mode_ == Mode::SumOnly ? "normal_loop_summation_on_exp_to_prefix_summation_on_exp" : "online_softmax";
  }
  std::string_view description() const override {
    return mode_ == Mode::SumOnly
               ? "max + sum-of-exp reductions -> one pass with running max and rescaled running sum"
               : "softmax's max, sum-of-exp and normalize -> per row, one statistics pass then the normalization";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override;

 protected:
  Survey survey(const ScheduleState& st) const override;

 private:
  std::string match(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m, SumNest& sum) const;

  Mode mode_;
};

struct SumOnlySoftmax final : PrefixSoftmax {
  SumOnlySoftmax() : PrefixSoftmax(Mode::SumOnly) {}
};
struct OnlineSoftmax final : PrefixSoftmax {
  OnlineSoftmax() : PrefixSoftmax(Mode::OnlineSoftmax) {}
};

}  // namespace steptp::strategies::softmax
