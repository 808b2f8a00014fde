#include "fingerprint/libgit2_commit_resolver.h"

#include <git2.h>

#include <memory>

namespace orch::fingerprint {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, Free>>;

using Repository = Owned<git_repository, git_repository_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Object = Owned<git_object, git_object_free>;
using DescribeResult = Owned<git_describe_result, git_describe_result_free>;
using StatusList = Owned<git_status_list, git_status_list_free>;

// "libgit2: <what>: <last error>" as a Status with a code matching the error class.
Status GitError(int code, const std::string& what) {
  const git_error* error = git_error_last();
  std::string message = what + ": " + (error != nullptr ? error->message : "unknown error");
  if (code == GIT_ENOTFOUND) return NotFound(std::move(message));
  return Status(StatusCode::kIoError, std::move(message));
}

Result<std::string> Describe(git_object* commit) {
  // The *_init functions, not the *_INIT macros: the macros leave fields to
  // zero-initialisation, which clang's -Wmissing-field-initializers refuses.
  git_describe_options options;
  git_describe_options_init(&options, GIT_DESCRIBE_OPTIONS_VERSION);
  options.describe_strategy = GIT_DESCRIBE_TAGS;
  options.show_commit_oid_as_fallback = 1;
  git_describe_result* raw = nullptr;
  int code = git_describe_commit(&raw, commit, &options);
  if (code != 0) return GitError(code, "describe");
  DescribeResult result(raw);
  git_describe_format_options format;
  git_describe_format_options_init(&format, GIT_DESCRIBE_FORMAT_OPTIONS_VERSION);
  git_buf buffer = GIT_BUF_INIT;
  code = git_describe_format(&buffer, result.get(), &format);
  if (code != 0) return GitError(code, "describe");
  std::string text(buffer.ptr, buffer.size);
  git_buf_dispose(&buffer);
  return text;
}

// Staged or unstaged changes to tracked files; untracked and ignored files do not count.
Result<bool> IsDirty(git_repository* repo) {
  if (git_repository_is_bare(repo)) return false;
  git_status_options options;
  git_status_options_init(&options, GIT_STATUS_OPTIONS_VERSION);
  options.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  options.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* raw = nullptr;
  int code = git_status_list_new(&raw, repo, &options);
  if (code != 0) return GitError(code, "status");
  StatusList list(raw);
  return git_status_list_entrycount(list.get()) > 0;
}

class Libgit2CommitResolver final : public CommitResolver {
 public:
  Libgit2CommitResolver() { git_libgit2_init(); }
  ~Libgit2CommitResolver() override { git_libgit2_shutdown(); }
  Libgit2CommitResolver(const Libgit2CommitResolver&) = delete;
  Libgit2CommitResolver& operator=(const Libgit2CommitResolver&) = delete;

  Result<CheckoutState> Resolve(const std::string& directory) override {
    git_repository* raw = nullptr;
    int code = git_repository_open_ext(&raw, directory.c_str(), 0, nullptr);
    if (code == GIT_ENOTFOUND) return NotFound("not a git repository: " + directory);
    if (code != 0) return GitError(code, "open " + directory);
    Repository repo(raw);
    Result<CheckoutState> state = ResolveOpen(repo.get());
    if (!state.ok()) return state.status().WithContext(directory);
    return state;
  }

 private:
  static Result<CheckoutState> ResolveOpen(git_repository* repo) {
    git_reference* raw_head = nullptr;
    int code = git_repository_head(&raw_head, repo);
    if (code == GIT_EUNBORNBRANCH || code == GIT_ENOTFOUND) {
      return Status(StatusCode::kFailedPrecondition, "repository has no commit yet");
    }
    if (code != 0) return GitError(code, "read HEAD");
    Reference head(raw_head);
    git_object* raw_commit = nullptr;
    code = git_reference_peel(&raw_commit, head.get(), GIT_OBJECT_COMMIT);
    if (code != 0) return GitError(code, "peel HEAD");
    Object commit(raw_commit);
    CheckoutState state;
    state.commit = git_oid_tostr_s(git_object_id(commit.get()));
    state.detached = git_repository_head_detached(repo) == 1;
    if (!state.detached) state.branch = git_reference_shorthand(head.get());
    ORCH_ASSIGN_OR_RETURN(state.describe, Describe(commit.get()));
    ORCH_ASSIGN_OR_RETURN(state.dirty, IsDirty(repo));
    return state;
  }
};

}  // namespace

std::unique_ptr<CommitResolver> MakeLibgit2CommitResolver() {
  return std::make_unique<Libgit2CommitResolver>();
}

}  // namespace orch::fingerprint
