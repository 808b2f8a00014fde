"""Typed driver errors: each carries the driver protocol's error code and the
exit status the driver ends with (docs/driver-protocol.md, "Exit status").

The codes are the llama.cpp driver's (drivers/llamacpp/job_settings.h,
ErrorCodeFor): invalid_job, invalid_combination, model_missing,
sha256_mismatch (exit 2) and engine_error (exit 3).
"""

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_ENGINE = 3


class DriverError(Exception):
    """A failure the driver reports as an error frame."""

    code = "engine_error"
    exit_status = EXIT_ENGINE

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class InvalidJob(DriverError):
    """A malformed job document or axis value; the message names the field and
    the value."""

    code = "invalid_job"
    exit_status = EXIT_INVALID


class InvalidCombination(DriverError):
    """A coordinate this engine cannot run (a combination rule, or something
    the running engine lacks)."""

    code = "invalid_combination"
    exit_status = EXIT_INVALID


class ModelMissing(DriverError):
    """The agent has no file for the model requirement, or the file is gone."""

    code = "model_missing"
    exit_status = EXIT_INVALID


class Sha256Mismatch(DriverError):
    """The model file's SHA-256 is not the one the requirement names."""

    code = "sha256_mismatch"
    exit_status = EXIT_INVALID


class EngineError(DriverError):
    """The engine failed while running a valid job."""

    code = "engine_error"
    exit_status = EXIT_ENGINE


ERROR_CODES = ("invalid_combination", "model_missing", "sha256_mismatch",
               "invalid_job", "engine_error")
