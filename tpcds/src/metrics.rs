//! Reading a Sift gateway's `/metrics` (Prometheus text) for the counters a benchmark
//! reports: the gateway's CPU seconds and the selects it answered. Any other store has no
//! such page (or another one): the reading is then `None`, never an error.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The counters of one reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GatewayReading {
    /// `process_cpu_seconds_total`.
    pub cpu_seconds: f64,
    /// `sift_requests_total` of operation SelectObjectContent, every status.
    pub select_requests: u64,
}

/// Reads `ENDPOINT/metrics` over plain HTTP, within 5 s.
pub async fn read(endpoint: &str) -> Option<GatewayReading> {
    let authority = endpoint
        .strip_prefix("http://")?
        .split('/')
        .next()?
        .to_string();
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect(&authority).await.ok()?;
        let request =
            format!("GET /metrics HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        parse(&response)
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), fetch)
        .await
        .ok()
        .flatten()
}

fn parse(text: &str) -> Option<GatewayReading> {
    let cpu_seconds = text
        .lines()
        .find_map(|l| l.strip_prefix("process_cpu_seconds_total "))
        .and_then(|v| v.trim().parse().ok())?;
    let select_requests = text
        .lines()
        .filter(|l| {
            l.starts_with("sift_requests_total{") && l.contains("operation=\"SelectObjectContent\"")
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<u64>().ok())
        .sum();
    Some(GatewayReading {
        cpu_seconds,
        select_requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_a_gateway_page() {
        let page = "HTTP/1.1 200 OK\r\n\r\n# HELP x\n\
            sift_requests_total{operation=\"GetObject\",status=\"206\"} 981\n\
            sift_requests_total{operation=\"SelectObjectContent\",status=\"200\"} 40\n\
            sift_requests_total{operation=\"SelectObjectContent\",status=\"400\"} 2\n\
            process_cpu_seconds_total 12.5\n";
        assert_eq!(
            parse(page),
            Some(GatewayReading {
                cpu_seconds: 12.5,
                select_requests: 42
            })
        );
        assert_eq!(parse("HTTP/1.1 404 Not Found\r\n\r\nNoSuchBucket"), None);
    }
}
