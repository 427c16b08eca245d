/// Names compared as people number things: runs of digits by value, so `node-2` sorts before
/// `node-10` and receivers 1, 2, ..., 10, 11 are listed in that order. Ties (`07` and `7`)
/// fall back to the plain string order, so the order is total.
public enum NaturalOrder {
    public static func less(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var i = 0, j = 0
        func digit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        while i < x.count, j < y.count {
            if digit(x[i]), digit(y[j]) {
                var si = i, sj = j
                while si < x.count, x[si] == 0x30 { si += 1 }
                while sj < y.count, y[sj] == 0x30 { sj += 1 }
                var ei = si, ej = sj
                while ei < x.count, digit(x[ei]) { ei += 1 }
                while ej < y.count, digit(y[ej]) { ej += 1 }
                if ei - si != ej - sj { return ei - si < ej - sj }
                for k in 0..<(ei - si) where x[si + k] != y[sj + k] { return x[si + k] < y[sj + k] }
                i = ei; j = ej
                continue
            }
            if x[i] != y[j] { return x[i] < y[j] }
            i += 1; j += 1
        }
        if x.count - i != y.count - j { return x.count - i < y.count - j }
        return a < b
    }
}
