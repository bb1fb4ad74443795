//! HTTPS: the gateway's own certificate and key (`--tls-cert`, `--tls-key`), and the
//! certificate authorities its upstream client trusts (`--ca-file`).
//!
//! Once clients, gateways and the store sit on different machines, requests leave the
//! trusted loopback, so the gateway terminates TLS itself with rustls and the aws-lc-rs
//! provider (the one the AWS SDK already links; naming it explicitly matters because the
//! dependency graph also enables ring, and rustls refuses to guess between two).
//!
//! Every file is read and checked when the gateway starts: a missing file, a PEM without a
//! certificate or a key, or a key that does not belong to the certificate stops it with the
//! flag named, never at the first connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {flag} {path}: {source}")]
    Read {
        flag: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{flag} {path}: not PEM: {message}")]
    Pem {
        flag: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{flag} {path}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it")]
    NoCertificate { flag: &'static str, path: PathBuf },
    #[error("{flag} {path}: a certificate that cannot be used: {source}")]
    Certificate {
        flag: &'static str,
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("--tls-key {path}: no PEM private key (PKCS#8, PKCS#1 or SEC1) in it")]
    NoKey { path: PathBuf },
    #[error("--tls-cert and --tls-key do not make a usable server identity: {0}")]
    Identity(rustls::Error),
    #[error("--tls-cert and --tls-key must be given together")]
    Half,
}

/// The provider every TLS configuration here is built with.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The server side: the certificate chain in `cert` (leaf first) and the private key in
/// `key`, offering HTTP/2 and HTTP/1.1 by ALPN, as the connection builder serves both.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = read_certificates("--tls-cert", cert)?;
    let key_pem = read("--tls-key", key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| TlsError::NoKey {
        path: key.to_path_buf(),
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Identity)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Identity)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The PEM text of a CA bundle (`--ca-file`, AWS_CA_BUNDLE), checked to hold at least one
/// certificate and only certificates a trust store takes (the SDK, which gets the text
/// because its trust store takes PEM, would panic on any other).
pub fn read_ca_bundle(path: &Path) -> Result<Vec<u8>, TlsError> {
    const FLAG: &str = "--ca-file";
    let pem = read(FLAG, path)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(FLAG, path, &pem)? {
        roots.add(cert).map_err(|source| TlsError::Certificate {
            flag: FLAG,
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(pem)
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        flag,
        path: path.to_path_buf(),
        source,
    })
}

fn read_certificates(
    flag: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    certificates(flag, path, &read(flag, path)?)
}

/// The certificates in `pem`, the text of `flag`'s file `path`: at least one.
fn certificates(
    flag: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            flag,
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            flag,
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}
