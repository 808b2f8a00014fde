#include "drivers/llamacpp/llama_types.h"

#include <array>
#include <utility>

namespace orch::drivers::llamacpp {
namespace {

constexpr std::array<std::pair<const char*, ggml_type>, 9> kCacheTypes = {{
    {"f32", GGML_TYPE_F32},
    {"f16", GGML_TYPE_F16},
    {"bf16", GGML_TYPE_BF16},
    {"q8_0", GGML_TYPE_Q8_0},
    {"q4_0", GGML_TYPE_Q4_0},
    {"q4_1", GGML_TYPE_Q4_1},
    {"q5_0", GGML_TYPE_Q5_0},
    {"q5_1", GGML_TYPE_Q5_1},
    {"iq4_nl", GGML_TYPE_IQ4_NL},
}};

constexpr std::array<std::pair<const char*, llama_ftype>, 19> kFileTypes = {{
    {"f32", LLAMA_FTYPE_ALL_F32},          {"f16", LLAMA_FTYPE_MOSTLY_F16},
    {"bf16", LLAMA_FTYPE_MOSTLY_BF16},     {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},
    {"q3_k_s", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"q3_k_l", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"iq4_xs", LLAMA_FTYPE_MOSTLY_IQ4_XS},
}};

}  // namespace

Result<ggml_type> CacheType(const std::string& field, const std::string& name) {
  for (const auto& [text, type] : kCacheTypes)
    if (name == text) return type;
  return InvalidArgument(field + ": unknown cache type \"" + name + "\"");
}

llama_flash_attn_type FlashAttentionType(FlashAttention attention) {
  switch (attention) {
    case FlashAttention::kOff:
      return LLAMA_FLASH_ATTN_TYPE_DISABLED;
    case FlashAttention::kOn:
      return LLAMA_FLASH_ATTN_TYPE_ENABLED;
    case FlashAttention::kAuto:
      break;
  }
  return LLAMA_FLASH_ATTN_TYPE_AUTO;
}

Result<llama_ftype> FileType(const std::string& name) {
  for (const auto& [text, type] : kFileTypes)
    if (name == text) return type;
  return InvalidArgument("unknown weight type \"" + name +
                         "\" (expected f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, "
                         "q5_1, iq4_nl, q2_k, q3_k_s/m/l, q4_k_s/m, q5_k_s/m, "
                         "q6_k, iq4_xs)");
}

std::string FileTypeName(std::uint32_t ftype) {
  for (const auto& [text, type] : kFileTypes)
    if (static_cast<std::uint32_t>(type) == ftype) return text;
  return "";
}

}  // namespace orch::drivers::llamacpp
