#include "op_domain.h"

#include "fused_ops.h"
#include "row_quantize_op.h"

namespace decide {

OrtCustomOpDomain* DecideOpDomain() {
  static Ort::CustomOpDomain* domain = [] {
    auto* d = new Ort::CustomOpDomain(kDecideOpDomain);
    AddRowQuantizeOp(*d);
    AddFusedOps(*d);
    return d;
  }();
  return *domain;  // the handle ONNX Runtime's SessionOptions::Add takes
}

}  // namespace decide
