#include "search/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"

namespace steptp::tune {
namespace {

void check(int rc) {
  if (rc != 0) throw base::Error(base::ErrorKind::Failed, std::string("xgboost: ") + XGBGetLastError());
}

// Owns a DMatrix built from rows of features (or from row-major inputs of `cols` columns).
struct Matrix {
  DMatrixHandle h = nullptr;
  explicit Matrix(const std::vector<Features>& x) {
    std::vector<float> flat;
    flat.reserve(x.size() * kFeatureCount);
    for (const auto& r : x) flat.insert(flat.end(), r.begin(), r.end());
    create(flat, kFeatureCount);
  }
  Matrix(const std::vector<float>& flat, size_t cols) { create(flat, cols); }
  void create(const std::vector<float>& flat, size_t cols) {
    check(XGDMatrixCreateFromMat(flat.data(), flat.size() / cols, cols, std::numeric_limits<float>::quiet_NaN(), &h));
  }
  void labels(const std::vector<double>& y) {
    std::vector<float> l(y.begin(), y.end());
    check(XGDMatrixSetFloatInfo(h, "label", l.data(), l.size()));
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  ~Matrix() { XGDMatrixFree(h); }
};

constexpr int kBoostRounds = 60;
// The pre-trained model sees ~1,000-2,000 programs of ~100 roots: deeper trees, more rounds.
constexpr int kPretrainRounds = 200;
constexpr size_t kInputCount = 2 * kFeatureCount;
constexpr const char* kModelFormat = "steptp-cost-model";
constexpr int kModelVersion = 1;

const char* objective_name(Objective o) { return o == Objective::Rank ? "rank:pairwise" : "reg:squarederror"; }

// Single-threaded, seeded and exact: the same data give the same trees on any machine.
void set_pretrain_params(BoosterHandle b, Objective objective, uint64_t seed) {
  const std::string s = std::to_string(seed % 2147483647);
  for (auto [k, v] : {std::pair<const char*, const char*>{"objective", objective_name(objective)}, {"max_depth", "6"},
                      {"eta", "0.1"}, {"min_child_weight", "1"}, {"subsample", "1"}, {"nthread", "1"},
                      {"seed", s.c_str()}, {"tree_method", "exact"}, {"verbosity", "0"}})
    check(XGBoosterSetParam(b, k, v));
}

std::vector<double> predict_rows(BoosterHandle b, const Matrix& m, size_t rows) {
  bst_ulong n = 0;
  const float* r = nullptr;
  check(XGBoosterPredict(b, m.h, 0, 0, 0, &n, &r));
  std::vector<double> out(rows);
  for (size_t i = 0; i < rows && i < n; ++i) out[i] = r[i];
  return out;
}

std::string save_booster_json(BoosterHandle b) {
  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(b, R"({"format": "json"})", &len, &buf));
  return std::string(buf, len);
}

BoosterHandle load_booster_json(const std::string& text, const std::vector<DMatrixHandle>& cache) {
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(cache.data(), cache.size(), &b));
  if (XGBoosterLoadModelFromBuffer(b, text.data(), text.size()) != 0) {
    std::string why = XGBGetLastError();
    XGBoosterFree(b);
    throw base::Error(base::ErrorKind::Failed, "xgboost: " + why);
  }
  check(XGBoosterSetParam(b, "nthread", "1"));
  return b;
}

}  // namespace

Objective objective_from(const std::string& name) {
  if (name == "rank") return Objective::Rank;
  if (name == "regression") return Objective::Regression;
  throw base::Error(base::ErrorKind::BadRequest, "objective must be rank or regression (got '" + name + "')",
                    "objective");
}

std::vector<float> model_inputs(const Features& root, const std::vector<Features>& x) {
  std::vector<float> flat;
  flat.reserve(x.size() * kInputCount);
  for (const auto& r : x) {
    flat.insert(flat.end(), r.begin(), r.end());
    for (size_t i = 0; i < kFeatureCount; ++i) flat.push_back(r[i] - root[i]);
  }
  return flat;
}

std::shared_ptr<const PretrainedModel> PretrainedModel::train(const std::vector<RootGroup>& groups,
                                                              const std::string& machine_kind, uint64_t seed,
                                                              Objective objective) {
  std::vector<float> flat;
  std::vector<double> y;
  std::vector<unsigned> sizes;
  std::set<std::string> workloads;
  for (const auto& g : groups) {
    if (g.x.size() < 2) continue;  // a group of one ranks nothing
    auto in = model_inputs(g.root_x, g.x);
    flat.insert(flat.end(), in.begin(), in.end());
    y.insert(y.end(), g.log2_speedup.begin(), g.log2_speedup.end());
    sizes.push_back(unsigned(g.x.size()));
    workloads.insert(g.workload);
  }
  if (sizes.empty())
    throw base::Error(base::ErrorKind::Invalid, "cost model training: no root with two measured programs");
  Matrix m(flat, kInputCount);
  m.labels(y);
  check(XGDMatrixSetUIntInfo(m.h, "group", sizes.data(), sizes.size()));
  std::shared_ptr<PretrainedModel> p(new PretrainedModel());
  check(XGBoosterCreate(&m.h, 1, &p->booster_));
  set_pretrain_params(p->booster_, objective, seed);
  for (int i = 0; i < kPretrainRounds; ++i) check(XGBoosterUpdateOneIter(p->booster_, i, m.h));
  p->booster_json_ = save_booster_json(p->booster_);
  p->kind_ = machine_kind;
  p->objective_ = objective;
  p->training_ = {{"samples", y.size()},
                  {"roots", sizes.size()},
                  {"workloads", workloads},
                  {"seed", seed},
                  {"objective", objective == Objective::Rank ? "rank" : "regression"},
                  {"rounds", kPretrainRounds}};
  return p;
}

PretrainedModel::~PretrainedModel() {
  if (booster_) XGBoosterFree(booster_);
}

void PretrainedModel::save(const std::string& path) const {
  nlohmann::json names = nlohmann::json::array();
  for (auto n : feature_names()) names.push_back(std::string(n));
  nlohmann::json j = {{"format", kModelFormat},
                      {"version", kModelVersion},
                      {"machine_kind", kind_},
                      {"features", names},
                      {"inputs", "features, then features minus the root's"},
                      {"training", training_},
                      {"booster", nlohmann::json::parse(booster_json_)}};
  base::write_file_atomically(path, j.dump() + "\n");
}

std::shared_ptr<const PretrainedModel> PretrainedModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw base::Error(base::ErrorKind::Invalid, "cannot read cost model " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto bad = [&](const std::string& why) {
    return base::Error(base::ErrorKind::Invalid, fmt::format("{}: not a steptp cost model: {}", path, why));
  };
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw bad("not JSON");
  if (!j.is_object() || j.value("format", "") != kModelFormat) throw bad("no \"format\": \"steptp-cost-model\"");
  if (j.value("version", 0) != kModelVersion)
    throw bad(fmt::format("version {} (this steptp reads {})", j.value("version", 0), kModelVersion));
  nlohmann::json names = nlohmann::json::array();
  for (auto n : feature_names()) names.push_back(std::string(n));
  if (j.value("features", nlohmann::json()) != names)
    throw base::Error(base::ErrorKind::Invalid,
                      path + ": the cost model was trained on other features than this steptp extracts; "
                             "train it again");
  if (!j.contains("booster") || !j.contains("machine_kind") || !j.contains("training")) throw bad("missing fields");
  std::shared_ptr<PretrainedModel> p(new PretrainedModel());
  p->booster_json_ = j["booster"].dump();
  p->kind_ = j["machine_kind"].get<std::string>();
  p->training_ = j["training"];
  p->objective_ = objective_from(p->training_.value("objective", "rank"));
  p->booster_ = load_booster_json(p->booster_json_, {});
  return p;
}

std::vector<double> PretrainedModel::predict(const Features& root, const std::vector<Features>& x) const {
  if (x.empty()) return {};
  Matrix m(model_inputs(root, x), kInputCount);
  return predict_rows(booster_, m, x.size());
}

CostModel::CostModel() = default;
CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

double CostModel::prior(const Features& x) { return -double(x[24]); }

void CostModel::use_pretrained(std::shared_ptr<const PretrainedModel> pretrained, const Features& root) {
  if (booster_) XGBoosterFree(booster_), booster_ = nullptr;
  pretrained_ = std::move(pretrained);
  root_ = root;
}

void CostModel::train(const std::vector<Features>& x, const std::vector<double>& y) {
  if (booster_) XGBoosterFree(booster_), booster_ = nullptr;
  if (x.size() < kMinTrainingSamples) return;
  if (pretrained_) {
    // Fine-tuning: XGBoost's training continuation (the pre-trained trees, then more boosted on
    // this root's measurements with the pre-training parameters; the root is one query group).
    Matrix m(model_inputs(root_, x), kInputCount);
    m.labels(y);
    const unsigned size = unsigned(x.size());
    check(XGDMatrixSetUIntInfo(m.h, "group", &size, 1));
    BoosterHandle b = load_booster_json(pretrained_->booster_json(), {m.h});
    try {
      set_pretrain_params(b, pretrained_->objective(), pretrained_->training().value("seed", uint64_t{0}));
      int done = 0;
      check(XGBoosterBoostedRounds(b, &done));
      for (int i = 0; i < kFineTuneRounds; ++i) check(XGBoosterUpdateOneIter(b, done + i, m.h));
    } catch (...) {
      XGBoosterFree(b);
      throw;
    }
    booster_ = b;
    return;
  }
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
  if (pretrained_ && !booster_) return pretrained_->predict(root_, x);
  if (!booster_) {
    for (size_t i = 0; i < x.size(); ++i) out[i] = prior(x[i]);
    return out;
  }
  if (pretrained_) return predict_rows(booster_, Matrix(model_inputs(root_, x), kInputCount), x.size());
  return predict_rows(booster_, Matrix(x), x.size());
}

size_t held_out_k(size_t n) { return std::max<size_t>(1, std::min<size_t>(5, n / 4)); }

double round_quality(double v) { return std::round(v * 1e4) / 1e4; }

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
