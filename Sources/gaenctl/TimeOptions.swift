import ArgumentParser
import TrialKit

extension TimeArgument {
    /// The time option's problem, if any (`TimeArgument` keeps it so the message can name
    /// the option): unparsable, or outside 1970-01-01...3000-01-01.
    func check(_ option: String) throws {
        if let problem { throw ValidationError("\(option): \(problem)") }
    }
}
