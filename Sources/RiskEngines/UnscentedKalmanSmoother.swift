#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// A one-dimensional augmented unscented Kalman filter and Rauch-Tung-Striebel smoother, the
/// model behind the NHS COVID-19 app's exposure-window score (riskscore-swift-public /
/// riskscore-kt-public, "Kalman1D"). The state is the distance to the other phone; the state,
/// transition noise and observation noise form a 3-dimensional augmented vector, giving 7 sigma
/// points. Written from the published description of the algorithm (Julier & Uhlmann's unscented
/// transform; pykalman's AugmentedUnscentedKalmanFilter, which the NHS Python model used);
/// no NHS code is used.
struct UnscentedKalmanSmoother1D {
    struct State: Equatable {
        var mean: Double
        var covariance: Double
    }

    let initial: State
    let transitionCovariance: Double
    let observationCovariance: Double
    let transition: (Double, Double) -> Double
    let observation: (Double, Double) -> Double
    let scale: Double
    // Seven sigma points in lanes 0...6 of a SIMD8; lane 7 has weight 0. Fixed-size vectors keep
    // the per-step work free of heap allocations (thousands of steps per window).
    let meanWeights: SIMD8<Double>
    let covarianceWeights: SIMD8<Double>
    private static let lanes = 0..<7

    init(initial: State, transitionCovariance: Double, observationCovariance: Double,
         alpha: Double, beta: Double, kappa: Double,
         transition: @escaping (Double, Double) -> Double, observation: @escaping (Double, Double) -> Double) {
        self.initial = initial
        self.transitionCovariance = transitionCovariance
        self.observationCovariance = observationCovariance
        self.transition = transition
        self.observation = observation
        let n = 3.0
        let lambda = alpha * alpha * (n + kappa) - n
        scale = n + lambda
        let common = 1 / (2 * scale)
        var wm = SIMD8<Double>(repeating: common), wc = SIMD8<Double>(repeating: common)
        wm[0] = lambda / scale
        wc[0] = lambda / scale + (1 - alpha * alpha + beta)
        wm[7] = 0
        wc[7] = 0
        meanWeights = wm
        covarianceWeights = wc
    }

    /// Sigma points of the augmented vector (state, transition noise, observation noise): the mean,
    /// then plus and minus sqrt(scale x variance) along each axis.
    private func sigmaPoints(_ s: State) -> (state: SIMD8<Double>, transition: SIMD8<Double>, observation: SIMD8<Double>) {
        let a = (scale * s.covariance).squareRoot()
        let q = (scale * transitionCovariance).squareRoot()
        let r = (scale * observationCovariance).squareRoot()
        return (SIMD8(s.mean, s.mean + a, s.mean, s.mean, s.mean - a, s.mean, s.mean, s.mean),
                SIMD8(0, 0, q, 0, 0, -q, 0, 0),
                SIMD8(0, 0, 0, r, 0, 0, -r, 0))
    }

    private func moments(_ points: SIMD8<Double>) -> State {
        let mean = (meanWeights * points).sum()
        let d = points - mean
        return State(mean: mean, covariance: (covarianceWeights * d * d).sum())
    }

    private func crossCovariance(_ x: SIMD8<Double>, _ xMean: Double, _ y: SIMD8<Double>, _ yMean: Double) -> Double {
        (covarianceWeights * (x - xMean) * (y - yMean)).sum()
    }

    private func apply(_ f: (Double, Double) -> Double, _ x: SIMD8<Double>, _ noise: SIMD8<Double>) -> SIMD8<Double> {
        var out = x
        for i in Self.lanes { out[i] = f(x[i], noise[i]) }
        return out
    }

    /// Update with an observation (nil: the prediction stands).
    private func update(propagated: SIMD8<Double>, observationNoise: SIMD8<Double>, z: Double?) -> State {
        let predicted = moments(propagated)
        guard let z else { return predicted }
        let y = apply(observation, propagated, observationNoise)
        let predictedObservation = moments(y)
        let cross = crossCovariance(propagated, predicted.mean, y, predictedObservation.mean)
        let gain = cross / predictedObservation.covariance
        return State(mean: predicted.mean + gain * (z - predictedObservation.mean),
                     covariance: predicted.covariance - gain * cross)
    }

    /// Filtered states: state t given observations 0...t. The first step updates the initial
    /// state with the first observation without a transition.
    func filter(_ observations: [Double?]) -> [State] {
        guard let first = observations.first else { return [] }
        let p0 = sigmaPoints(initial)
        var state = update(propagated: p0.state, observationNoise: p0.observation, z: first)
        var states = [state]
        states.reserveCapacity(observations.count)
        for z in observations.dropFirst() {
            let p = sigmaPoints(state)
            state = update(propagated: apply(transition, p.state, p.transition), observationNoise: p.observation, z: z)
            states.append(state)
        }
        return states
    }

    /// Smoothed states: state t given all observations (Rauch-Tung-Striebel backward pass).
    func smooth(_ observations: [Double?]) -> [State] {
        let filtered = filter(observations)
        guard var next = filtered.last else { return [] }
        var smoothed = [State](repeating: next, count: filtered.count)
        for t in stride(from: filtered.count - 2, through: 0, by: -1) {
            let current = filtered[t]
            let p = sigmaPoints(current)
            let propagated = apply(transition, p.state, p.transition)
            let predicted = moments(propagated)
            let cross = crossCovariance(propagated, predicted.mean, p.state, current.mean)
            let gain = cross / predicted.covariance
            next = State(mean: current.mean + gain * (next.mean - predicted.mean),
                         covariance: current.covariance + gain * gain * (next.covariance - predicted.covariance))
            smoothed[t] = next
        }
        return smoothed
    }
}
