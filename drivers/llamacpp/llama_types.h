// Names used in coordinates mapped to the linked llama.cpp build's enums.
#pragma once

#include <string>

#include "base/status.h"
#include "drivers/llamacpp/job_settings.h"
#include "llama.h"

namespace orch::drivers::llamacpp {

// "q8_0" -> GGML_TYPE_Q8_0; kInvalidArgument naming `field` otherwise.
Result<ggml_type> CacheType(const std::string& field, const std::string& name);

llama_flash_attn_type FlashAttentionType(FlashAttention attention);

// "q4_k_m" -> LLAMA_FTYPE_MOSTLY_Q4_K_M; kInvalidArgument otherwise.
Result<llama_ftype> FileType(const std::string& name);

// The inverse for the types above; "" for any other value.
std::string FileTypeName(std::uint32_t ftype);

}  // namespace orch::drivers::llamacpp
