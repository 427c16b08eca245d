import Foundation

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
    let meanWeights: [Double]
    let covarianceWeights: [Double]

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
        meanWeights = [lambda / scale] + Array(repeating: common, count: 6)
        covarianceWeights = [lambda / scale + (1 - alpha * alpha + beta)] + Array(repeating: common, count: 6)
    }

    /// Sigma points of the augmented vector (state, transition noise, observation noise): the mean,
    /// then plus and minus sqrt(scale x variance) along each axis.
    private func sigmaPoints(_ s: State) -> (state: [Double], transition: [Double], observation: [Double]) {
        let a = (scale * s.covariance).squareRoot()
        let q = (scale * transitionCovariance).squareRoot()
        let r = (scale * observationCovariance).squareRoot()
        return ([s.mean, s.mean + a, s.mean, s.mean, s.mean - a, s.mean, s.mean],
                [0, 0, q, 0, 0, -q, 0],
                [0, 0, 0, r, 0, 0, -r])
    }

    private func moments(_ points: [Double]) -> State {
        let mean = zip(meanWeights, points).reduce(0) { $0 + $1.0 * $1.1 }
        let cov = zip(covarianceWeights, points).reduce(0) { $0 + $1.0 * ($1.1 - mean) * ($1.1 - mean) }
        return State(mean: mean, covariance: cov)
    }

    private func crossCovariance(_ x: [Double], _ xMean: Double, _ y: [Double], _ yMean: Double) -> Double {
        var c = 0.0
        for i in 0..<7 { c += covarianceWeights[i] * (x[i] - xMean) * (y[i] - yMean) }
        return c
    }

    /// Update with an observation (nil: the prediction stands).
    private func update(propagated: [Double], observationNoise: [Double], z: Double?) -> State {
        let predicted = moments(propagated)
        guard let z else { return predicted }
        let y = (0..<7).map { observation(propagated[$0], observationNoise[$0]) }
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
            let propagated = (0..<7).map { transition(p.state[$0], p.transition[$0]) }
            state = update(propagated: propagated, observationNoise: p.observation, z: z)
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
            let propagated = (0..<7).map { transition(p.state[$0], p.transition[$0]) }
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
