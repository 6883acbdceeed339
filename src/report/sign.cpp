// Ed25519 signing of evidence files with libsodium.
#include "kc/sign.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kc/json_writer.h"
#include "kc/report.h"
#include "report/yaml_read.h"

#ifdef KC_HAVE_SODIUM
#include <sodium.h>
#endif

namespace kc::report {

namespace {

constexpr const char* kSignatureFormat = "kc-signature/1";

Result<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument(path + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// What is signed: the format, the file's name (not its directory: the run
/// may be moved) and the SHA-256 of its bytes.
std::string message(const std::string& file, const std::string& sha) {
  return std::string(kSignatureFormat) + "\n" + std::filesystem::path(file).filename().string() + "\n" + sha + "\n";
}

#ifdef KC_HAVE_SODIUM
std::string to_hex(const unsigned char* p, std::size_t n) {
  std::string out(2 * n + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), p, n);
  out.resize(2 * n);
  return out;
}

bool from_hex(const std::string& hex, unsigned char* out, std::size_t n) {
  std::size_t got = 0;
  return sodium_hex2bin(out, n, hex.data(), hex.size(), nullptr, &got, nullptr) == 0 && got == n;
}

Result<std::string> first_word(const std::string& path) {
  KC_ASSIGN_OR_RETURN(std::string text, read_all(path));
  std::istringstream in(text);
  std::string w;
  in >> w;
  return w;
}

/// The public key from a .pub file, or derived from a secret key file.
Result<std::string> public_key(const std::string& path) {
  KC_ASSIGN_OR_RETURN(const std::string hex, first_word(path));
  if (hex.size() == 2 * crypto_sign_PUBLICKEYBYTES) return hex;
  unsigned char sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES];
  if (hex.size() == 2 * crypto_sign_SECRETKEYBYTES && from_hex(hex, sk, sizeof sk)) {
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    sodium_memzero(sk, sizeof sk);
    return to_hex(pk, sizeof pk);
  }
  return invalid_argument(path + ": not a kc key (64 hex digits of an Ed25519 public key, or 128 of a secret key; "
                                 "`kc keygen --out FILE` writes both)");
}

Status ready() {
  if (sodium_init() < 0) return internal_error("libsodium failed to initialise");
  return ok_status();
}
#endif

}  // namespace

bool signing_available() {
#ifdef KC_HAVE_SODIUM
  return true;
#else
  return false;
#endif
}

#ifdef KC_HAVE_SODIUM

Status generate_key_files(const std::string& path) {
  KC_RETURN_IF_ERROR(ready());
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    return invalid_argument(path + ": exists; kc keygen never overwrites a key (choose another --out)");
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  const std::string secret = to_hex(sk, sizeof sk) + "\n";
  sodium_memzero(sk, sizeof sk);
  {
    const mode_t old = ::umask(077);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << secret;
    out.close();
    ::umask(old);
    if (!out) return internal_error(path + ": cannot write the secret key");
  }
  std::ofstream pub(path + ".pub", std::ios::binary | std::ios::trunc);
  pub << to_hex(pk, sizeof pk) << "\n";
  pub.close();
  if (!pub) return internal_error(path + ".pub: cannot write the public key");
  return ok_status();
}

Status sign_file(const std::string& file, const std::string& key_path) {
  KC_RETURN_IF_ERROR(ready());
  KC_ASSIGN_OR_RETURN(const std::string hex, first_word(key_path));
  unsigned char sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES];
  if (hex.size() != 2 * crypto_sign_SECRETKEYBYTES || !from_hex(hex, sk, sizeof sk))
    return invalid_argument(key_path + ": not a kc secret key (128 hex digits; `kc keygen --out FILE` writes one)");
  crypto_sign_ed25519_sk_to_pk(pk, sk);
  KC_ASSIGN_OR_RETURN(const std::string bytes, read_all(file));
  const std::string sha = sha256_hex(bytes);
  const std::string m = message(file, sha);
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(m.data()), m.size(), sk);
  sodium_memzero(sk, sizeof sk);
  JsonWriter w(2);
  w.begin_object();
  w.field("format", kSignatureFormat);
  w.field("file", std::filesystem::path(file).filename().string());
  w.field("sha256", sha);
  w.field("algorithm", "Ed25519");
  w.field("public_key", to_hex(pk, sizeof pk));
  w.field("signature", to_hex(sig, sizeof sig));
  w.end_object();
  return write_file(file + ".sig", w.take() + "\n");
}

Result<std::string> verify_file_signature(const std::string& file, const std::string& public_key_path) {
  KC_RETURN_IF_ERROR(ready());
  KC_ASSIGN_OR_RETURN(const std::string want_pk, public_key(public_key_path));
  const std::string sig_path = file + ".sig";
  std::error_code ec;
  if (!std::filesystem::exists(sig_path, ec))
    return invalid_argument(sig_path + ": no signature (sign with --sign-key when the run is made)");
  YamlDoc doc;
  KC_RETURN_IF_ERROR(doc.load(sig_path));
  KC_ASSIGN_OR_RETURN(const std::string format, doc.str(doc.root, "format"));
  if (format != kSignatureFormat) return invalid_argument(sig_path + ": format '" + format + "' is not " + kSignatureFormat);
  KC_ASSIGN_OR_RETURN(const std::string pk_hex, doc.str(doc.root, "public_key"));
  KC_ASSIGN_OR_RETURN(const std::string sig_hex, doc.str(doc.root, "signature"));
  KC_ASSIGN_OR_RETURN(const std::string sha_claimed, doc.str(doc.root, "sha256"));
  if (pk_hex != want_pk)
    return invalid_argument(sig_path + ": signed by key " + pk_hex.substr(0, 16) + "..., not by the given key " +
                            want_pk.substr(0, 16) + "...");
  KC_ASSIGN_OR_RETURN(const std::string bytes, read_all(file));
  const std::string sha = sha256_hex(bytes);
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sig[crypto_sign_BYTES];
  if (!from_hex(pk_hex, pk, sizeof pk) || !from_hex(sig_hex, sig, sizeof sig))
    return invalid_argument(sig_path + ": malformed key or signature");
  const std::string m = message(file, sha);
  if (crypto_sign_verify_detached(sig, reinterpret_cast<const unsigned char*>(m.data()), m.size(), pk) != 0)
    return invalid_argument(file + ": the signature does not match the file" +
                            (sha != sha_claimed ? " (its SHA-256 is " + sha.substr(0, 16) + "..., the signed one " +
                                                      sha_claimed.substr(0, 16) + "...: the file changed after signing)"
                                                : ""));
  return "signature valid: Ed25519 by " + pk_hex.substr(0, 16) + "... over " +
         std::filesystem::path(file).filename().string() + " (sha256 " + sha.substr(0, 16) + "...)";
}

#else

Status generate_key_files(const std::string&) {
  return unavailable("signing: this kc was built without libsodium (scripts/install-deps.sh installs libsodium-dev)");
}
Status sign_file(const std::string&, const std::string&) { return generate_key_files(""); }
Result<std::string> verify_file_signature(const std::string&, const std::string&) { return generate_key_files(""); }

#endif

}  // namespace kc::report
