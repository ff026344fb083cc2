/* hm_version.h — HMTUNE_VERSION, the hmtune release (pyproject.toml's `version`), which
 * the Makefile passes on the command line (-DHMTUNE_VERSION="X.Y.Z"); "unknown" when a
 * file is compiled without it. The .pcf of a trace and the statistics JSON of a re-run
 * carry it, as the Python side's outputs do (hmtune/core/version.py). */
#ifndef HM_VERSION_H
#define HM_VERSION_H

#ifndef HMTUNE_VERSION
#define HMTUNE_VERSION "unknown"
#endif

#endif
