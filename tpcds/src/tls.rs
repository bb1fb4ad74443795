//! https:// endpoints: whom the client trusts, and telling a refused certificate apart from
//! a network failure.
//!
//! The client checks a server's certificate against the system's certificate authorities,
//! or, when `--ca-file` (or AWS_CA_BUNDLE, the AWS CLI's convention) names a PEM bundle,
//! against that bundle only. rustls runs with the aws-lc-rs provider, the one the AWS SDK
//! already links (named explicitly: the dependency graph also enables ring).
//!
//! A certificate the client refuses will be refused again by every retry, and a gateway in
//! front of the same objects usually carries a certificate from the same authority, so a
//! refusal is not transient: [`is_refusal`] lets the request layer fail at once with the
//! reason instead of spending its retries and backoff on other endpoints.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// A PEM file of certificate authorities, read and checked when the flag is parsed.
#[derive(Clone)]
pub struct CaBundle {
    path: PathBuf,
    roots: Arc<rustls::RootCertStore>,
}

impl fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CaBundle({})", self.path.display())
    }
}

impl CaBundle {
    /// Reads `path` (clap's value parser for `--ca-file`): at least one certificate, each
    /// one usable as a trust anchor.
    pub fn read(path: &str) -> Result<CaBundle, String> {
        let path = Path::new(path);
        let pem =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("{}: not PEM: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("{}: not a usable CA certificate: {e}", path.display()))?;
        }
        if roots.is_empty() {
            return Err(format!(
                "{}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
                path.display()
            ));
        }
        Ok(CaBundle {
            path: path.to_path_buf(),
            roots: Arc::new(roots),
        })
    }
}

/// The client side of TLS: `ca`'s authorities, or the system's when there is none.
pub fn client_config(ca: Option<&CaBundle>) -> Arc<rustls::ClientConfig> {
    let roots = match ca {
        Some(ca) => Arc::clone(&ca.roots),
        None => Arc::new(system_roots()),
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports rustls's default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The system's certificate authorities; those that cannot be read are left out (an
/// endpoint they would have vouched for is then refused, with the hint to use --ca-file).
fn system_roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(found.certs);
    roots
}

/// A TLS handshake the client gave up on: the server's certificate was refused (unknown
/// authority, wrong name, expired) or the server spoke something that is not TLS.
#[derive(Debug)]
pub struct Refusal {
    pub server: String,
    pub reason: rustls::Error,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS with {} refused: {}", self.server, self.reason)?;
        if matches!(self.reason, rustls::Error::InvalidCertificate(_)) {
            f.write_str(
                " (is the endpoint's certificate signed by an authority in --ca-file or \
                 AWS_CA_BUNDLE, or by one the system trusts, and issued for this host name?)",
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// `error` from a TLS handshake with `server`, as an I/O error that carries a [`Refusal`]
/// when rustls refused (rather than the network failing).
pub(crate) fn handshake_error(server: &str, error: io::Error) -> io::Error {
    let reason = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .cloned();
    match reason {
        Some(reason) => io::Error::new(
            io::ErrorKind::InvalidData,
            Refusal {
                server: server.to_string(),
                reason,
            },
        ),
        None => error,
    }
}

/// Whether a [`Refusal`] is somewhere in `error`'s chain of sources.
pub(crate) fn is_refusal(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        // io::Error's own `source` skips the error it wraps, so look inside it.
        let wrapped = e
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .is_some_and(|inner| inner.is::<Refusal>());
        if e.is::<Refusal>() || wrapped {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pki(name: &str) -> String {
        format!(
            "{}/../tests/fixtures/tls/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn a_ca_bundle_is_checked_when_parsed() {
        assert!(CaBundle::read(&pki("ca.pem")).is_ok());
        let absent = CaBundle::read(&pki("absent.pem")).expect_err("absent");
        assert!(absent.starts_with("cannot read"), "{absent}");
        let key = CaBundle::read(&pki("ca.key")).expect_err("a key, not a certificate");
        assert!(key.contains("no PEM certificate"), "{key}");
    }

    #[test]
    fn refusals_are_found_behind_io_errors() {
        let refused = handshake_error(
            "h:1",
            io::Error::new(
                io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            ),
        );
        assert!(refused.to_string().contains("--ca-file"), "{refused}");
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(refused);
        assert!(is_refusal(boxed.as_ref()));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(!is_refusal(&handshake_error("h:1", reset)));
    }
}
