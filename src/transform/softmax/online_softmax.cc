// 41 online_softmax: a softmax's max, sum-of-exp and normalization become, per row, one pass for
// the statistics followed by the normalization (prefix_softmax.h).
#include "transform/softmax/prefix_softmax.h"

namespace steptp::strategies::softmax {
namespace {

RegisterStrategy<OnlineSoftmax> online_softmax_registrar(41);

}  // namespace
}  // namespace steptp::strategies::softmax
