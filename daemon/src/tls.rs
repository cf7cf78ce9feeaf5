//! TLS for the daemon's HTTP clients (providers, `fetch`, MCP servers over
//! HTTP): reqwest and rmcp are built with rustls and no crypto provider,
//! and this installs ring's as the process default before a client is made.

/// Install ring as rustls's crypto provider, once per process.
pub fn ensure_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Already installed (by an embedding program) is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
