"""orch driver SDK: write an orch engine driver in Python.

The driver protocol (docs/driver-protocol.md) as a library: frames
(frames.py), position records (records.py), the per-position digest through
the project's C ABI (digest.py, liborchdigest via ctypes), the job document
(job.py), coordinate axes and capability declarations (axes.py), typed errors
(errors.py), model file checks (model_file.py) and the process shell that
ties them together (driver.py). Standard library only.
"""

from orch_driver.errors import (DriverError, EngineError, InvalidCombination,
                                InvalidJob, ModelMissing, Sha256Mismatch)

__all__ = ["DriverError", "EngineError", "InvalidCombination", "InvalidJob",
           "ModelMissing", "Sha256Mismatch"]
