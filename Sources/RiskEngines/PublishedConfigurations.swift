#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// The apps' published configurations, the defaults of `gaenctl trial replay` (and of `risk
/// swisscovid`/`risk immuni` without --configuration). Values only (facts), with their sources:
/// - cwa (current): cwa-app-android, Corona-Warn-App/src/main/assets/default_app_config_android.bin
///   at commit d98f9c20c595ca5dc877f87f032b47d8b8175a79 (v3.2.1), its riskCalculationParameters
///   as protobuf JSON; the same as Tests/RiskEnginesTests/Fixtures/risk/cwa/default-app-config-risk-parameters.json.
/// - cwa-v1 (mid-2020): the CWA v1 exposure configuration (minimumRiskScore 11, attenuation
///   level values 0,1,1,1,1,1,1,1, days 5 x 8, duration 0,0,0,1,1,1,1,1, TRL 1...8, thresholds
///   55/63, bucket weights 1, 0.5, 0, normalization divisor 25, 15 minutes), as
///   Tests/RiskEnginesTests/Fixtures/risk/cwa-v1/configuration.json gives it.
/// - nhs (current): ukhsa-collaboration/covid-19-app-ios-ag-public ExposureConfigurationHandler
///   at 8d7a64bc5e10c0dc89889bad3558bcf648f97378 (Tests/RiskEnginesTests/Fixtures/risk/nhs/exposure-configuration.json).
/// - swisscovid, immuni: SwissCovidConfiguration.published, ImmuniConfiguration.published.
public enum PublishedRiskConfigurations {
    public static let cwa = #"""
{
 "minutesAtAttenuationWeights": [
  {
   "attenuationRange": {
    "max": 63.0,
    "maxExclusive": true
   },
   "weight": 0.8
  },
  {
   "attenuationRange": {
    "min": 63.0,
    "max": 73.0,
    "maxExclusive": true
   },
   "weight": 1.0
  },
  {
   "attenuationRange": {
    "min": 73.0,
    "max": 79.0,
    "maxExclusive": true
   },
   "weight": 0.1
  }
 ],
 "normalizedTimePerEWToRiskLevelMapping": [
  {
   "normalizedTimeRange": {
    "max": 9.0,
    "maxExclusive": true
   },
   "riskLevel": 1
  },
  {
   "normalizedTimeRange": {
    "min": 9.0,
    "max": 9999.0
   },
   "riskLevel": 2
  }
 ],
 "normalizedTimePerDayToRiskLevelMapping": [
  {
   "normalizedTimeRange": {
    "min": 5.0,
    "max": 9.0,
    "maxExclusive": true
   },
   "riskLevel": 1
  },
  {
   "normalizedTimeRange": {
    "min": 9.0,
    "max": 9999.0
   },
   "riskLevel": 2
  }
 ],
 "trlEncoding": {
  "infectiousnessOffsetStandard": 1,
  "infectiousnessOffsetHigh": 2,
  "reportTypeOffsetSelfReport": 2,
  "reportTypeOffsetConfirmedClinicalDiagnosis": 4,
  "reportTypeOffsetConfirmedTest": 6
 },
 "transmissionRiskValueMapping": [
  {
   "transmissionRiskLevel": 1
  },
  {
   "transmissionRiskLevel": 2
  },
  {
   "transmissionRiskLevel": 3,
   "transmissionRiskValue": 0.6
  },
  {
   "transmissionRiskLevel": 4,
   "transmissionRiskValue": 0.8
  },
  {
   "transmissionRiskLevel": 5,
   "transmissionRiskValue": 1.0
  },
  {
   "transmissionRiskLevel": 6,
   "transmissionRiskValue": 1.2
  },
  {
   "transmissionRiskLevel": 7,
   "transmissionRiskValue": 1.4
  },
  {
   "transmissionRiskLevel": 8,
   "transmissionRiskValue": 1.6
  }
 ],
 "maxEncounterAgeInDays": 10
}
"""#

    public static let cwaV1 = #"""
{"minimumRiskScore": 11, "attenuationLevelValues": [0, 1, 1, 1, 1, 1, 1, 1], "daysSinceLastExposureLevelValues": [5, 5, 5, 5, 5, 5, 5, 5], "durationLevelValues": [0, 0, 0, 1, 1, 1, 1, 1], "transmissionRiskLevelValues": [1, 2, 3, 4, 5, 6, 7, 8], "attenuationDurationThresholds": [55, 63], "attenuationDurationWeights": [1.0, 0.5, 0.0], "defaultBucketOffset": 0, "riskScoreNormalizationDivisor": 25, "increasedRiskMinutes": 15}
"""#

    public static let nhs = #"""
{
 "exposureNotification": {
  "minimumRiskScore": 11,
  "attenuationDurationThresholds": [
   55,
   63
  ],
  "attenuationLevelValues": [
   0,
   1,
   1,
   1,
   1,
   1,
   1,
   1
  ],
  "daysSinceLastExposureLevelValues": [
   5,
   5,
   5,
   5,
   5,
   5,
   5,
   5
  ],
  "durationLevelValues": [
   0,
   0,
   0,
   1,
   1,
   1,
   1,
   1
  ],
  "transmissionRiskLevelValues": [
   1,
   2,
   3,
   4,
   5,
   6,
   7,
   8
  ],
  "attenuationWeight": 50.0,
  "daysSinceLastExposureWeight": 20,
  "durationWeight": 50.0,
  "transmissionRiskWeight": 50.0
 },
 "riskCalculation": {
  "durationBucketWeights": [
   1.0,
   0.5,
   0.0
  ],
  "riskThreshold": 20.0
 },
 "riskScore": {
  "sampleResolution": 1.0,
  "expectedDistance": 0.1,
  "minimumDistance": 1.0,
  "rssiParameters": {
   "weightCoefficient": 0.1270547531082051,
   "intercept": 4.2309333657856945,
   "covariance": 0.4947614361027773
  },
  "powerLossParameters": {
   "wavelength": 0.125,
   "pathLossFactor": 20.0,
   "refDeviceLoss": 0.0
  },
  "observationType": "log",
  "initialData": {
   "mean": 2.0,
   "covariance": 10.0
  },
  "smootherParameters": {
   "alpha": 1.0,
   "beta": 0.0,
   "kappa": 0.0
  }
 },
 "v2RiskCalculation": {
  "daysSinceOnsetToInfectiousness": [
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   0,
   1,
   1,
   1,
   2,
   2,
   2,
   2,
   2,
   2,
   1,
   1,
   1,
   1,
   1,
   1,
   0,
   0,
   0,
   0,
   0
  ],
  "infectiousnessWeights": [
   0.0,
   0.4,
   1.0
  ],
  "reportTypeWhenMissing": 1,
  "riskThreshold": 120
 }
}
"""#
}
