// 40 normal_loop_summation_on_exp_to_prefix_summation_on_exp: a softmax's max and sum-of-exp
// reductions become one pass with a running max and a rescaled running sum (prefix_softmax.h).
#include "transform/softmax/prefix_softmax.h"

namespace steptp::strategies::softmax {
namespace {

RegisterStrategy<SumOnlySoftmax> sum_only_softmax_registrar(40);

}  // namespace
}  // namespace steptp::strategies::softmax
