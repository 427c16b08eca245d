import Testing
@testable import TrialKit

@Suite("Replay accuracy: intervals, clusters, ROC")
struct ReplayAccuracyTests {
    typealias O = ReplayAccuracy.Outcome

    @Test("Wilson intervals match the published values (Newcombe 1998, table I: 95 %)")
    func wilson() throws {
        // 5/10: 0.2366-0.7634; 0/10: 0-0.2775; 10/10: 0.7225-1 (Newcombe, Stat Med 17:857, method 3).
        let half = try #require(ReplayAccuracy.wilson(5, 10))
        #expect(abs(half.low - 0.2366) < 5e-5 && abs(half.high - 0.7634) < 5e-5)
        let none = try #require(ReplayAccuracy.wilson(0, 10))
        #expect(none.low == 0 && abs(none.high - 0.2775) < 5e-5)
        let all = try #require(ReplayAccuracy.wilson(10, 10))
        #expect(abs(all.low - 0.7225) < 5e-5 && abs(all.high - 1) < 1e-12)
        #expect(ReplayAccuracy.wilson(0, 0) == nil)
    }

    @Test("Correlated contacts: the cluster bootstrap is wider than the same outcomes as independent contacts")
    func clustersWiden() throws {
        // 10 close pairs of 5 contacts each; whole pairs are notified or not (perfectly correlated).
        var clustered: [O] = [], independent: [O] = []
        for p in 0..<10 {
            for k in 0..<5 {
                let notified = p < 6
                clustered.append(O(cluster: "pair \(p)", close: true, notified: notified, score: notified ? 1 : 0))
                independent.append(O(cluster: "contact \(p)-\(k)", close: true, notified: notified, score: notified ? 1 : 0))
            }
        }
        let c = ReplayAccuracy.summary(clustered), i = ReplayAccuracy.summary(independent)
        let cw = try #require(c.tprBootstrap), iw = try #require(i.tprBootstrap)
        #expect(c.clusters == 10 && i.clusters == 50)
        #expect(cw.high - cw.low > 1.5 * (iw.high - iw.low), "clustered \(cw), independent \(iw)")
        // Both centred on 0.6; the same seed gives the same interval.
        #expect(cw.low < 0.6 && cw.high > 0.6)
        #expect(ReplayAccuracy.summary(clustered).tprBootstrap == cw)
    }

    @Test("ROC AUC: 1 when scores separate close from far, 0 reversed, 0.5 when all tie; average precision")
    func roc() {
        let separated = [O(cluster: "a", close: true, notified: true, score: 9), O(cluster: "b", close: true, notified: true, score: 8),
                         O(cluster: "c", close: false, notified: false, score: 2), O(cluster: "d", close: false, notified: false, score: 1)]
        #expect(ReplayAccuracy.summary(separated).rocAUC == 1)
        #expect(ReplayAccuracy.averagePrecision(separated) == 1)
        let reversed = separated.map { O(cluster: $0.cluster, close: !$0.close, notified: $0.notified, score: $0.score) }
        #expect(ReplayAccuracy.summary(reversed).rocAUC == 0)
        let tied = separated.map { O(cluster: $0.cluster, close: $0.close, notified: true, score: 5) }
        #expect(ReplayAccuracy.summary(tied).rocAUC == 0.5)
        // One far contact scoring between the close ones: AUC 0.75 (3 of 4 close-far pairs ordered).
        let mixed = [O(cluster: "a", close: true, notified: true, score: 9), O(cluster: "b", close: false, notified: true, score: 5),
                     O(cluster: "c", close: true, notified: false, score: 3), O(cluster: "d", close: false, notified: false, score: 1)]
        #expect(ReplayAccuracy.summary(mixed).rocAUC == 0.75)
        // No far contact: no curve.
        #expect(ReplayAccuracy.rocCurve(separated.filter(\.close)).isEmpty)
    }
}
