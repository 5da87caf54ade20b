#include "search/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "base/error.h"

namespace steptp::tune {
namespace {

void check(int rc) {
  if (rc != 0) throw base::Error(base::ErrorKind::Failed, std::string("xgboost: ") + XGBGetLastError());
}

// Owns a DMatrix built from rows of features.
struct Matrix {
  DMatrixHandle h = nullptr;
  explicit Matrix(const std::vector<Features>& x) {
    std::vector<float> flat;
    flat.reserve(x.size() * kFeatureCount);
    for (const auto& r : x) flat.insert(flat.end(), r.begin(), r.end());
    check(XGDMatrixCreateFromMat(flat.data(), x.size(), kFeatureCount, std::numeric_limits<float>::quiet_NaN(), &h));
  }
  ~Matrix() { XGDMatrixFree(h); }
};

constexpr int kBoostRounds = 60;

}  // namespace

CostModel::CostModel() = default;
CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

double CostModel::prior(const Features& x) { return -double(x[24]); }

void CostModel::train(const std::vector<Features>& x, const std::vector<double>& y) {
  if (booster_) XGBoosterFree(booster_), booster_ = nullptr;
  if (x.size() < kMinTrainingSamples) return;
  Matrix m(x);
  std::vector<float> labels(y.begin(), y.end());
  check(XGDMatrixSetFloatInfo(m.h, "label", labels.data(), labels.size()));
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(&m.h, 1, &b));
  // Small trees, shrinkage, one thread and a fixed seed: deterministic, and sane on ~10-300 rows.
  for (auto [k, v] : {std::pair{"objective", "reg:squarederror"}, {"max_depth", "4"}, {"eta", "0.2"},
                      {"min_child_weight", "1"}, {"subsample", "1"}, {"nthread", "1"}, {"seed", "0"},
                      {"tree_method", "exact"}, {"verbosity", "0"}})
    check(XGBoosterSetParam(b, k, v));
  for (int i = 0; i < kBoostRounds; ++i) check(XGBoosterUpdateOneIter(b, i, m.h));
  booster_ = b;
}

std::vector<double> CostModel::predict(const std::vector<Features>& x) const {
  std::vector<double> out(x.size());
  if (x.empty()) return out;
  if (!booster_) {
    for (size_t i = 0; i < x.size(); ++i) out[i] = prior(x[i]);
    return out;
  }
  Matrix m(x);
  bst_ulong n = 0;
  const float* r = nullptr;
  check(XGBoosterPredict(booster_, m.h, 0, 0, 0, &n, &r));
  for (size_t i = 0; i < x.size() && i < n; ++i) out[i] = r[i];
  return out;
}

double kendall_tau(const std::vector<double>& p, const std::vector<double>& m) {
  double concordant = 0, discordant = 0, tie_p = 0, tie_m = 0;
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j) {
      double a = p[i] - p[j], b = m[i] - m[j];
      if (a == 0 && b == 0) continue;
      if (a == 0) tie_p++;
      else if (b == 0) tie_m++;
      else if ((a > 0) == (b > 0)) concordant++;
      else discordant++;
    }
  double denom = std::sqrt((concordant + discordant + tie_p) * (concordant + discordant + tie_m));
  return denom > 0 ? (concordant - discordant) / denom : 0;
}

double top_k_recall(const std::vector<double>& p, const std::vector<double>& m, size_t k) {
  k = std::min(k, p.size());
  if (k == 0) return 0;
  auto top = [k](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
  };
  auto a = top(p), b = top(m);
  std::vector<size_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return double(both.size()) / double(k);
}

}  // namespace steptp::tune
