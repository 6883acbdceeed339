// kc — Ed25519 signatures over kc's evidence files (traces, certificates),
// with libsodium (docs/scale-out.md "Signed records"). A signature is a
// detached file FILE.sig naming the file, its SHA-256 and the public key; it
// is made over the file's exact bytes, so any change to the file, including a
// trace rewritten and re-chained, fails verification.
#pragma once

#include <string>

#include "kc/status.h"

namespace kc::report {

/// Whether this kc was built with libsodium (else every call below is
/// unavailable with the reason).
bool signing_available();

/// Writes a new key pair: PATH (the secret key, hex, mode 0600) and PATH.pub
/// (the public key, hex). Refuses to overwrite an existing PATH.
Status generate_key_files(const std::string& path);

/// Signs FILE's bytes with the secret key in KEY_PATH: writes FILE.sig.
Status sign_file(const std::string& file, const std::string& key_path);

/// Verifies FILE.sig against FILE and the public key (a .pub file, or the
/// secret key's file, whose public half is derived). Returns a line saying
/// what was verified, or an error saying what does not match.
Result<std::string> verify_file_signature(const std::string& file, const std::string& public_key_path);

}  // namespace kc::report
