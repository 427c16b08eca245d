import GaenApp
import GaendAPI
import GaenMetrics
import Testing

@Suite("The node's metrics exposition")
struct MetricsExpositionTests {
    func status(node: String, site: String = "bus 7") -> GaendExposureProperties {
        var p = GaendExposureProperties()
        p.version = "0.1.0"; p.enabled = true; p.status = ["active"]; p.node = node; p.site = site
        p.provideDiagnosisKeysRemaining = 6; p.scanCount = 3
        return p
    }

    /// Every sample line of the text format: NAME{labels} VALUE, one per line, nothing raw.
    func checkLines(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 }, "a control character in \(line.debugDescription)")
            if !line.hasPrefix("#") { #expect(line.hasPrefix("gaend_"), "\(line.debugDescription)") }
        }
        #expect(text.hasSuffix("\n"))
    }

    @Test("Names with a carriage return, CR LF, a NUL or a quote stay on their line, escaped or replaced")
    func hostileNames() {
        for node in ["a\rb", "a\r\nb", "a\0b", "a\"b\\c", "x\u{1b}[31my", "a\u{85}b"] {
            let text = MetricsExposition(status: status(node: node), busName: "org.gaend.hci0").text
            checkLines(text)
            #expect(text.contains("gaend_up{controller=\"hci0\",node=\""))
        }
        #expect(MetricsExposition.escape("a\r\nb") == "a\u{FFFD}\\nb")
        #expect(MetricsExposition.escape("q\"\\") == "q\\\"\\\\")
    }

    @Test("The app's status becomes its gauges; a failed last sync is 0")
    func appMetrics() {
        var app = AppStatus(packagesHeld: 5, packagesProvided: 3, packagesWaiting: 2)
        app.lastSync = SyncRecord(startedAt: 100, finishedAt: 160, server: "http://x", newPackages: 1, provided: 0, refused: 1,
                                  pending: 2, bytes: 10, error: "gaend: gone")
        let text = MetricsExposition(status: status(node: "b1"), busName: "org.gaend.hci0", app: app).text
        checkLines(text)
        #expect(text.contains("gaend_app_last_sync_success{controller=\"hci0\",node=\"b1\",site=\"bus 7\"} 0\n"))
        #expect(text.contains("gaend_app_packages_waiting{controller=\"hci0\",node=\"b1\",site=\"bus 7\"} 2\n"))
        #expect(text.contains("gaend_app_last_sync_timestamp_seconds{controller=\"hci0\",node=\"b1\",site=\"bus 7\"} 160\n"))
    }

    @Test("What waits for gaend, since when, the last provide and the refusals are metrics")
    func appWaitingAndRefusals() {
        let l = "{controller=\"hci0\",node=\"b1\",site=\"bus 7\""
        var app = AppStatus(packagesHeld: 14, packagesProvided: 11, packagesWaiting: 2, packagesRefused: 1, oldestWaitingFetchedAt: 1_700_000_000,
                            lastProvidedAt: 1_700_003_600, refusedDownloadsTotal: 4, refusedByGaendTotal: 1)
        var text = MetricsExposition(status: status(node: "b1"), busName: "org.gaend.hci0", app: app).text
        checkLines(text)
        #expect(text.contains("gaend_app_oldest_waiting_package_timestamp_seconds\(l)} 1700000000\n"))
        #expect(text.contains("gaend_app_last_provide_timestamp_seconds\(l)} 1700003600\n"))
        #expect(text.contains("gaend_app_packages_refused\(l)} 1\n"))
        #expect(text.contains("# TYPE gaend_app_packages_refused_total counter\n"))
        #expect(text.contains("gaend_app_packages_refused_total\(l),by=\"app\"} 4\n"))
        #expect(text.contains("gaend_app_packages_refused_total\(l),by=\"gaend\"} 1\n"))
        // Nothing waits, nothing provided yet (a status from before these fields): 0, not absent.
        app = AppStatus(packagesHeld: 0, packagesProvided: 0, packagesWaiting: 0)
        text = MetricsExposition(status: status(node: "b1"), busName: "org.gaend.hci0", app: app).text
        #expect(text.contains("gaend_app_oldest_waiting_package_timestamp_seconds\(l)} 0\n"))
        #expect(text.contains("gaend_app_last_provide_timestamp_seconds\(l)} 0\n"))
        #expect(text.contains("gaend_app_packages_refused_total\(l),by=\"gaend\"} 0\n"))
    }

    @Test("A node that does not answer keeps its labels, gaend_up 0")
    func down() {
        let labels = MetricsExposition.labels(controller: "hci1", node: "n", site: "s")
        #expect(MetricsExposition.down(labels: labels) == """
            # HELP gaend_up Whether gaend answered on D-Bus (1) or not (0).
            # TYPE gaend_up gauge
            gaend_up{controller="hci1",node="n",site="s"} 0

            """)
    }
}
