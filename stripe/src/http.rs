//! The blocking HTTP client set-up shared by the workspace's HTTPS clients (this crate's
//! [`Client`](crate::Client) and the runner's model decider): TLS by rustls with the *ring*
//! provider, trusting the Mozilla roots bundled at build time, so a client builds and verifies
//! the same way on any host, whether or not it has a system CA store.

use std::sync::Arc;

/// A `reqwest` blocking client builder whose TLS is rustls (ring) over the bundled roots; set
/// timeouts and the rest on it as usual.
pub fn client_builder() -> Result<reqwest::blocking::ClientBuilder, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(reqwest::blocking::Client::builder().tls_backend_preconfigured(tls))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_without_a_process_wide_crypto_provider() {
        let built = super::client_builder().map(|b| b.build());
        assert!(matches!(built, Ok(Ok(_))), "{built:?}");
    }
}
