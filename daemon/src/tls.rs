//! TLS for the daemon's HTTP clients (providers, `fetch`, MCP servers over
//! HTTP). reqwest and rmcp are built with rustls and no crypto provider:
//! this module builds the one TLS configuration every client uses, with
//! ring as its provider, once: certificates are checked by
//! the platform verifier against the system's trust store, which is read
//! when that configuration is made (every certificate file in it), not
//! again for each client.

use std::sync::{Arc, OnceLock};

/// A reqwest client builder with the daemon's TLS configuration.
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(client_config())
}

/// The TLS configuration, made on first use and shared (the verifier and
/// its roots behind an `Arc`); HTTP/1.1, as the clients speak. Without a
/// usable system trust store no certificate is trusted: HTTPS fails, with
/// the reason in the log, and plain HTTP (a local model server) still works.
fn client_config() -> rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            use rustls_platform_verifier::BuilderVerifierExt;
            let builder = || {
                rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .expect("ring supports rustls's default protocol versions")
            };
            let mut config = match builder().with_platform_verifier() {
                Ok(verified) => verified.with_no_client_auth(),
                Err(e) => {
                    tracing::warn!(
                        "cannot use the system's trust store ({e}): HTTPS to providers, fetch and MCP servers will \
                         fail until one is installed (the ca-certificates package, or SSL_CERT_FILE) and swivald \
                         restarted"
                    );
                    builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
                }
            };
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            config
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_made_once_and_shared() {
        let (first, second) = (client_config(), client_config());
        assert!(Arc::ptr_eq(first.crypto_provider(), second.crypto_provider()));
        assert_eq!(first.alpn_protocols, vec![b"http/1.1".to_vec()]);
        client_builder().build().expect("a client with it");
    }
}
