#include "engine_binding.h"

#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "errors.h"
#include "ort_runtime.h"
#include "thread_priority.h"

namespace decide {

Napi::Error MakeError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

namespace {

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << std::setprecision(17) << value;
  return out.str();
}

// A Promise already rejected with `error` (a call refused before any work was queued).
Napi::Value RejectedWith(Napi::Env env, const Napi::Error& error) {
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(error.Value());
  return deferred.Promise();
}

Napi::Value Rejected(Napi::Env env, const std::string& code, const std::string& message) {
  return RejectedWith(env, MakeError(env, code, message));
}

// An AsyncWorker that settles a Promise and maps every exception to (code, message).
class PromiseWorker : public Napi::AsyncWorker {
 public:
  explicit PromiseWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  virtual void Run() = 0;
  virtual Napi::Value Result(Napi::Env env) = 0;

  void Execute() override {
    try {
      Run();
    } catch (const std::exception&) {
      const CodedMessage error = CodedCurrentException();
      Fail(error.code, error.message);
    }
  }
  void OnOK() override {
    Napi::HandleScope scope(Env());
    deferred_.Resolve(Result(Env()));
  }
  void OnError(const Napi::Error& error) override {
    Napi::HandleScope scope(Env());
    deferred_.Reject(MakeError(Env(), code_, error.Message()).Value());
  }

 private:
  void Fail(const std::string& code, const std::string& message) {
    code_ = code;
    SetError(message);
  }
  Napi::Promise::Deferred deferred_;
  std::string code_ = kErrRuntime;
};

class LoadWorker final : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, std::string ort_library, ScorerOptions options,
             std::function<void(std::shared_ptr<Scorer>)> done)
      : PromiseWorker(env), ort_library_(std::move(ort_library)), options_(std::move(options)), done_(std::move(done)) {}

 protected:
  void Run() override {
    // Before the session exists: its intra-op threads, created with it, inherit the priority.
    LowerThisThreadPriority(options_.compute_nice);
    EnsureOrtLoaded(ort_library_);
    scorer_ = std::make_shared<Scorer>(options_);
  }
  Napi::Value Result(Napi::Env env) override {
    done_(scorer_);
    return env.Undefined();
  }
  void OnError(const Napi::Error& error) override {
    done_(nullptr);
    PromiseWorker::OnError(error);
  }

 public:
  void KeepAlive(Napi::Object owner) { owner_ = Napi::Persistent(owner); }

 private:
  Napi::ObjectReference owner_;
  std::string ort_library_;
  ScorerOptions options_;
  std::function<void(std::shared_ptr<Scorer>)> done_;
  std::shared_ptr<Scorer> scorer_;
};

Napi::Object CountersObject(Napi::Env env, const ScoreCounters& c) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("calls", Napi::Number::New(env, static_cast<double>(c.calls)));
  out.Set("prefixTokensComputed", Napi::Number::New(env, static_cast<double>(c.prefix_tokens_computed)));
  out.Set("cachedTokens", Napi::Number::New(env, static_cast<double>(c.cached_tokens)));
  out.Set("suffixTokens", Napi::Number::New(env, static_cast<double>(c.suffix_tokens)));
  out.Set("forwardPasses", Napi::Number::New(env, static_cast<double>(c.forward_passes)));
  out.Set("prefixPasses", Napi::Number::New(env, static_cast<double>(c.prefix_passes)));
  out.Set("suffixPasses", Napi::Number::New(env, static_cast<double>(c.suffix_passes)));
  out.Set("paddedTokens", Napi::Number::New(env, static_cast<double>(c.padded_tokens)));
  out.Set("prefixCacheEvictions", Napi::Number::New(env, static_cast<double>(c.prefix_cache_evictions)));
  out.Set("pastTokensCopied", Napi::Number::New(env, static_cast<double>(c.past_tokens_copied)));
  out.Set("passBufferMoves", Napi::Number::New(env, static_cast<double>(c.pass_buffer_moves)));
  out.Set("deviceCopies", Napi::Number::New(env, static_cast<double>(c.device_copies)));
  out.Set("hostToDeviceBytes", Napi::Number::New(env, static_cast<double>(c.host_to_device_bytes)));
  out.Set("deviceToHostBytes", Napi::Number::New(env, static_cast<double>(c.device_to_host_bytes)));
  out.Set("runMillis", Napi::Number::New(env, c.run_millis));
  out.Set("hostMillis", Napi::Number::New(env, c.host_millis));
  return out;
}

class ScoreWorker final : public PromiseWorker {
 public:
  ScoreWorker(Napi::Env env, std::shared_ptr<Scorer> scorer, Napi::Object batch, ScoreInput input)
      : PromiseWorker(env), scorer_(std::move(scorer)), input_(input) {
    // Keeps the typed arrays (and so the pointers in input_) alive until the worker is done.
    batch_ = Napi::Persistent(batch);
  }

 protected:
  void Run() override {
    // This libuv thread joins the intra-op pool in the session's runs.
    LowerThisThreadPriority(scorer_->Options().compute_nice);
    output_ = scorer_->Score(input_);
  }
  Napi::Value Result(Napi::Env env) override {
    Napi::Object out = Napi::Object::New(env);
    auto logits = Napi::Float32Array::New(env, output_.label_logits.size());
    std::copy(output_.label_logits.begin(), output_.label_logits.end(), logits.Data());
    auto lse = Napi::Float32Array::New(env, output_.log_sum_exp.size());
    std::copy(output_.log_sum_exp.begin(), output_.log_sum_exp.end(), lse.Data());
    auto cached = Napi::Int32Array::New(env, output_.cached_tokens.size());
    std::copy(output_.cached_tokens.begin(), output_.cached_tokens.end(), cached.Data());
    out.Set("cachedTokens", cached);
    out.Set("labelLogits", logits);
    out.Set("logSumExp", lse);
    out.Set("counters", CountersObject(env, output_.counters));
    return out;
  }

 private:
  std::shared_ptr<Scorer> scorer_;
  ScoreInput input_;
  ScoreOutput output_;
  Napi::ObjectReference batch_;
};

// Reads batch[key] as an Int32Array; throws a JS TypeError-like Error with code ERR_INPUT.
Napi::Int32Array Int32Field(Napi::Env env, Napi::Object batch, const char* key) {
  Napi::Value value = batch.Get(key);
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    throw MakeError(env, kErrInput, std::string("batch.") + key + " must be an Int32Array");
  }
  return value.As<Napi::Int32Array>();
}

// Load options: every field is required and checked here, because a cast of a NaN, negative or
// huge double into an int or size_t is undefined or wraps. The defaults and the friendlier
// validation live in src/engine/engine-options.ts; these only refuse what it never sends.
Napi::Value RequiredField(Napi::Env env, Napi::Object options, const char* key) {
  Napi::Value value = options.Get(key);
  if (value.IsUndefined()) throw MakeError(env, kErrInput, std::string("options.") + key + " is required");
  return value;
}

}  // namespace

double RequiredNumber(Napi::Env env, Napi::Object options, const char* key, double min, double max, bool integer) {
  Napi::Value value = RequiredField(env, options, key);
  const double number = value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : std::nan("");
  if (!std::isfinite(number) || number < min || number > max || (integer && std::trunc(number) != number)) {
    throw MakeError(env, kErrInput,
                    std::string("options.") + key + " must be a finite " + (integer ? "integer" : "number") + " from " +
                        FormatNumber(min) + " to " + FormatNumber(max));
  }
  return number;
}

namespace {

int RequiredInt(Napi::Env env, Napi::Object options, const char* key, int min) {
  return static_cast<int>(RequiredNumber(env, options, key, min, std::numeric_limits<int>::max(), true));
}

// Up to 2^53: every such integer is exact in a double.
int64_t RequiredCount(Napi::Env env, Napi::Object options, const char* key, int64_t min) {
  return static_cast<int64_t>(RequiredNumber(env, options, key, static_cast<double>(min), kMaxExactInteger, true));
}

bool RequiredBool(Napi::Env env, Napi::Object options, const char* key) {
  Napi::Value value = RequiredField(env, options, key);
  if (!value.IsBoolean()) throw MakeError(env, kErrInput, std::string("options.") + key + " must be true or false");
  return value.As<Napi::Boolean>().Value();
}

std::string RequiredString(Napi::Env env, Napi::Object options, const char* key, bool allow_empty) {
  Napi::Value value = RequiredField(env, options, key);
  if (!value.IsString() || (!allow_empty && value.As<Napi::String>().Utf8Value().empty())) {
    throw MakeError(env, kErrInput, std::string("options.") + key + " must be a" + (allow_empty ? "" : " non-empty") + " string");
  }
  return value.As<Napi::String>().Utf8Value();
}

ScorerOptions ReadLoadOptions(Napi::Env env, Napi::Object options) {
  ScorerOptions out;
  out.decoder.model_path = RequiredString(env, options, "modelPath", false);
  const std::string provider = RequiredString(env, options, "provider", false);
  if (provider != "cpu" && provider != "cuda") throw MakeError(env, kErrInput, "options.provider must be 'cpu' or 'cuda'");
  out.decoder.provider = ParseProvider(provider);
  out.decoder.intra_op_threads = RequiredInt(env, options, "threads", 1);
  out.decoder.device_id = RequiredInt(env, options, "deviceId", 0);
  out.decoder.num_kv_heads = RequiredInt(env, options, "numKvHeads", 1);
  out.decoder.head_dim = RequiredInt(env, options, "headDim", 1);
  out.decoder.vocab_size = RequiredCount(env, options, "vocabSize", 1);
  out.decoder.profile_prefix = RequiredString(env, options, "ortProfilePrefix", true);
  out.prefix_cache_bytes = static_cast<size_t>(RequiredCount(env, options, "prefixCacheBytes", 0));
  out.token_budget = RequiredCount(env, options, "tokenBudget", 1);
  out.past_budget_bytes = RequiredCount(env, options, "pastBudgetBytes", 0);
  out.logits_budget_bytes = RequiredCount(env, options, "logitsBudgetBytes", 1);
  out.attention_budget = RequiredCount(env, options, "attentionBudget", 0);
  out.attention_budget_floor = RequiredCount(env, options, "attentionBudgetFloor", 1);
  out.num_heads = RequiredInt(env, options, "numHeads", 1);
  out.attention_weight = RequiredNumber(env, options, "attentionWeight", 0, kMaxExactInteger, false);
  out.pass_overhead_tokens = RequiredNumber(env, options, "passOverheadTokens", 0, kMaxExactInteger, false);
  out.max_context = RequiredInt(env, options, "maxContext", 0);
  out.pack_suffixes = RequiredBool(env, options, "packSuffixes");
  out.prefill_chunks = RequiredBool(env, options, "prefillChunks");
  out.compute_nice = static_cast<int>(RequiredNumber(env, options, "computeNice", 0, 19, true));
  out.decoder.shape_buckets = RequiredBool(env, options, "shapeBuckets");
  out.decoder.length_multiple = RequiredInt(env, options, "passLengthMultiple", 1);
  out.decoder.cuda_graphs = RequiredBool(env, options, "cudaGraphs");
  out.decoder.log_severity = static_cast<int>(RequiredNumber(env, options, "ortLogSeverity", 0, 4, true));
  return out;
}

}  // namespace

Napi::Function EngineBinding::Define(Napi::Env env) {
  return DefineClass(env, "NativeEngine",
                     {
                         InstanceMethod<&EngineBinding::Load>("load"),
                         InstanceMethod<&EngineBinding::Score>("score"),
                         InstanceMethod<&EngineBinding::Info>("info"),
                         InstanceMethod<&EngineBinding::Counters>("counters"),
                         InstanceMethod<&EngineBinding::ClearPrefixCache>("clearPrefixCache"),
                         InstanceMethod<&EngineBinding::Close>("close"),
                     });
}

EngineBinding::EngineBinding(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineBinding>(info) {}

std::shared_ptr<Scorer> EngineBinding::RequireScorer(Napi::Env env) {
  if (closed_) throw MakeError(env, kErrEngineClosed, "the engine is closed");
  if (!scorer_) throw MakeError(env, kErrEngineClosed, "the engine is not loaded");
  return scorer_;
}

Napi::Value EngineBinding::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return Rejected(env, kErrEngineClosed, "the engine is closed");
  if (scorer_ || loading_) return Rejected(env, kErrInput, "the engine is already loaded");
  if (info.Length() < 1 || !info[0].IsObject()) return Rejected(env, kErrInput, "load(options) needs an options object");
  Napi::Object options = info[0].As<Napi::Object>();
  ScorerOptions scorer_options;
  std::string ort_library;
  try {
    scorer_options = ReadLoadOptions(env, options);
    ort_library = RequiredString(env, options, "ortLibrary", false);
  } catch (const Napi::Error& e) {
    return RejectedWith(env, e);
  }

  loading_ = true;
  auto* worker = new LoadWorker(env, ort_library, scorer_options, [this](std::shared_ptr<Scorer> scorer) {
    loading_ = false;
    if (!closed_) scorer_ = std::move(scorer);
  });
  // The worker holds a reference to this object, so the callback above never outlives it.
  worker->KeepAlive(info.This().As<Napi::Object>());
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value EngineBinding::Score(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    std::shared_ptr<Scorer> scorer = RequireScorer(env);
    if (info.Length() < 1 || !info[0].IsObject()) throw MakeError(env, kErrInput, "score(batch) needs a batch object");
    Napi::Object batch = info[0].As<Napi::Object>();
    auto prefix_tokens = Int32Field(env, batch, "prefixTokens");
    auto prefix_offsets = Int32Field(env, batch, "prefixOffsets");
    auto suffix_tokens = Int32Field(env, batch, "suffixTokens");
    auto suffix_offsets = Int32Field(env, batch, "suffixOffsets");
    auto suffix_group = Int32Field(env, batch, "suffixGroup");
    auto label_ids = Int32Field(env, batch, "labelIds");
    auto label_offsets = Int32Field(env, batch, "labelOffsets");
    auto prefix_scopes = Int32Field(env, batch, "prefixScopes");
    if (prefix_offsets.ElementLength() < 1 || suffix_offsets.ElementLength() < 1) {
      throw MakeError(env, kErrInput, "offset arrays need at least one element");
    }
    ScoreInput input;
    input.num_groups = static_cast<int>(prefix_offsets.ElementLength() - 1);
    input.num_suffixes = static_cast<int>(suffix_offsets.ElementLength() - 1);
    if (suffix_group.ElementLength() != static_cast<size_t>(input.num_suffixes) ||
        label_offsets.ElementLength() != static_cast<size_t>(input.num_suffixes) + 1) {
      throw MakeError(env, kErrInput, "suffixGroup / labelOffsets lengths do not match suffixOffsets");
    }
    if (prefix_scopes.ElementLength() != static_cast<size_t>(input.num_groups)) {
      throw MakeError(env, kErrInput, "prefixScopes needs one scope per group");
    }
    input.prefix_tokens = prefix_tokens.Data();
    input.prefix_offsets = prefix_offsets.Data();
    input.prefix_scopes = prefix_scopes.Data();
    input.prefix_tokens_length = prefix_tokens.ElementLength();
    input.suffix_tokens = suffix_tokens.Data();
    input.suffix_offsets = suffix_offsets.Data();
    input.suffix_group = suffix_group.Data();
    input.suffix_tokens_length = suffix_tokens.ElementLength();
    input.label_ids = label_ids.Data();
    input.label_offsets = label_offsets.Data();
    input.label_ids_length = label_ids.ElementLength();
    auto* worker = new ScoreWorker(env, std::move(scorer), batch, input);
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  } catch (const Napi::Error& e) {
    return RejectedWith(env, e);
  }
}

Napi::Value EngineBinding::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Scorer> scorer = RequireScorer(env);
  const ModelInfo& model = scorer->Info();
  Napi::Object out = Napi::Object::New(env);
  out.Set("numLayers", model.kv.num_layers);
  out.Set("numKvHeads", model.kv.num_kv_heads);
  out.Set("headDim", model.kv.head_dim);
  out.Set("vocabSize", Napi::Number::New(env, static_cast<double>(model.vocab_size)));
  out.Set("kvDtype", model.kv.elem_size == 2 ? "float16" : "float32");
  out.Set("hasLogitsIndex", model.has_logits_index);
  out.Set("hasPositionIds", model.has_position_ids);
  out.Set("packsSuffixes", scorer->PacksSuffixes());
  out.Set("provider", ProviderName(scorer->Options().decoder.provider));
  out.Set("hasLabelHead", model.has_label_head);
  out.Set("deviceCopyPath", scorer->DeviceCopyPath());
  const DecoderOptions& decoder = scorer->Options().decoder;
  out.Set("passShapes", decoder.cuda_graphs ? "cuda-graphs" : decoder.shape_buckets ? "buckets" : "exact");
  out.Set("attentionBudget", Napi::Number::New(env, static_cast<double>(scorer->Options().attention_budget)));
  out.Set("ortLibrary", LoadedOrtLibrary());
  out.Set("kvBytesPerToken", Napi::Number::New(env, static_cast<double>(model.kv.BytesPerToken())));
  return out;
}

// Counters and ClearPrefixCache run on the JS thread: neither waits for a running call (scorer.h).
Napi::Value EngineBinding::Counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Scorer> scorer = RequireScorer(env);
  Napi::Object out = CountersObject(env, scorer->Counters());
  out.Set("prefixCacheBytes", Napi::Number::New(env, static_cast<double>(scorer->CacheBytes())));
  out.Set("prefixCacheEntries", Napi::Number::New(env, static_cast<double>(scorer->CacheEntries())));
  out.Set("callsInProgress", Napi::Number::New(env, scorer->CallsInProgress()));
  return out;
}

Napi::Value EngineBinding::ClearPrefixCache(const Napi::CallbackInfo& info) {
  RequireScorer(info.Env())->ClearCache();
  return info.Env().Undefined();
}

Napi::Value EngineBinding::Close(const Napi::CallbackInfo& info) {
  // Idempotent. Running score calls hold their own reference to the Scorer and finish normally;
  // the session is released when the last of them is done.
  closed_ = true;
  scorer_.reset();
  return info.Env().Undefined();
}

}  // namespace decide
