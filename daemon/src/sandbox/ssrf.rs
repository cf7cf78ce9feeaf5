//! Which IP addresses `fetch_url` may connect to. Anything that is not
//! plain global unicast is forbidden: loopback, RFC 1918, link-local,
//! CGNAT, multicast, documentation and benchmark ranges, reserved and
//! unspecified addresses, IPv6 ULA and site-local. IPv4-mapped and NAT64
//! addresses are judged by the IPv4 address they carry. An explicit
//! allow-list (`fetch_allow_networks`) lets admins and tests through.

use crate::config::Cidr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is an address `fetch_url` must never reach on its own.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_forbidden(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_forbidden(v4),
            None => v6_forbidden(v6),
        },
    }
}

/// An address `fetch_url` refused to connect to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("url resolves to private/internal address ({0}), blocked for security")]
pub struct Blocked(pub IpAddr);

/// Whether `ip` may be fetched: allowed networks win, then the
/// forbidden ranges decide.
pub fn check_address(ip: IpAddr, allow: &[Cidr]) -> Result<(), Blocked> {
    if allow.iter().any(|net| net.contains(ip)) || !is_forbidden(ip) {
        Ok(())
    } else {
        Err(Blocked(ip))
    }
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64
/// (`64:ff9b::a.b.c.d`) address.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let o = v6.octets();
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    None
}

/// (network, prefix length) pairs of IPv4 space that is not global unicast.
const V4_FORBIDDEN: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network", unspecified
    ([10, 0, 0, 0], 8),      // RFC 1918
    ([100, 64, 0, 0], 10),   // CGNAT (RFC 6598)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local, cloud metadata
    ([172, 16, 0, 0], 12),   // RFC 1918
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // RFC 1918
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation
    ([203, 0, 113, 0], 24),  // documentation
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, broadcast
];

fn v4_forbidden(ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    V4_FORBIDDEN.iter().any(|(net, len)| {
        let mask = u32::MAX << (32 - u32::from(*len));
        ip & mask == u32::from_be_bytes(*net) & mask
    })
}

/// Special-purpose blocks inside global unicast 2000::/3.
const V6_FORBIDDEN_IN_GLOBAL: &[(u128, u8)] = &[
    (0x2001_0000 << 96, 23), // IETF protocol assignments (Teredo, ORCHID, ...)
    (0x2001_0db8 << 96, 32), // documentation
    (0x2002_0000 << 96, 16), // 6to4 (carries an IPv4 address)
    (0x3fff_0000 << 96, 20), // documentation (RFC 9637)
];

fn v6_forbidden(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let in_net = |net: u128, len: u8| {
        let mask = u128::MAX << (128 - u32::from(len));
        bits & mask == net & mask
    };
    // Only 2000::/3 is global unicast; everything else (::, ::1, fc00::/7,
    // fe80::/10, fec0::/10, ff00::/8, 64:ff9b:1::/48, 100::/64, and the
    // IETF reserved blocks) is forbidden.
    if !in_net(0x2000 << 112, 3) {
        return true;
    }
    V6_FORBIDDEN_IN_GLOBAL.iter().any(|(net, len)| in_net(*net, *len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_forbidden() {
        for s in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.2.7",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "2002:7f00:1::1",
            "100::1",
        ] {
            assert!(is_forbidden(ip(s)), "{s} should be forbidden");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!is_forbidden(ip(s)), "{s} should be allowed");
        }
    }

    #[test]
    fn allow_list_wins_over_the_forbidden_ranges() {
        let allow: Vec<Cidr> = vec!["127.0.0.2/32".parse().unwrap()];
        assert!(check_address(ip("127.0.0.2"), &allow).is_ok());
        let err = check_address(ip("127.0.0.1"), &allow).unwrap_err().to_string();
        assert_eq!(err, "url resolves to private/internal address (127.0.0.1), blocked for security");
        assert!(check_address(ip("8.8.8.8"), &[]).is_ok());
    }
}
