#include "fingerprint/fingerprint_text.h"

#include <optional>
#include <sstream>

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/flatten.h"

namespace orch::fingerprint {

std::string RenderFingerprintText(const Fingerprint& fingerprint) {
  std::ostringstream out;
  out << "fingerprint " << FingerprintId(fingerprint) << "\n";
  std::vector<FlatField> fields = FlattenFingerprint(fingerprint);
  for (DiffGroup group :
       {DiffGroup::kHardware, DiffGroup::kGpuDriver, DiffGroup::kEngine, DiffGroup::kModel}) {
    out << "\n" << DiffGroupName(group) << "\n";
    bool any = false;
    for (const FlatField& field : fields) {
      if (field.group != group) continue;
      out << "  " << field.path << ": " << DisplayValue(field.value) << "\n";
      any = true;
    }
    if (!any) out << "  (none)\n";
  }
  return out.str();
}

}  // namespace orch::fingerprint
