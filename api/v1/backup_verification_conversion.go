package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// afterEachValue is the one value of the after-each annotation that is the v1 field
// (afterEachBackup: true); any other value stays an annotation both ways.
const afterEachValue = "true"

func isAfterEachValue(v string) bool { return v == afterEachValue }

// verificationToAnnotations stores spec.verification as v1beta2's three annotations. It
// reports a spec.verification with nothing set, which no annotation can hold.
func verificationToAnnotations(meta *metav1.ObjectMeta, v *BackupVerification, lost *annotatedFields) (empty bool) {
	var in BackupVerification
	if v != nil {
		in = *v
	}
	afterEach := ""
	if in.AfterEachBackup {
		afterEach = afterEachValue
	}
	for _, f := range []annotatedField{
		{annotation: v1beta2.BackupVerifyAfterEachAnnotation, value: afterEach, fits: isAfterEachValue},
		{annotation: v1beta2.BackupVerifyScheduleAnnotation, value: in.Schedule},
		{annotation: v1beta2.BackupVerifyTimeZoneAnnotation, value: in.TimeZone},
	} {
		fieldToAnnotation(meta, f, lost)
	}
	return v != nil && in == BackupVerification{}
}

// verificationFromAnnotations is spec.verification from v1beta2's annotations: nil when
// none of them holds a field, unless the v1 original had an empty one.
func verificationFromAnnotations(meta *metav1.ObjectMeta, kept annotatedFields, empty bool) *BackupVerification {
	v := BackupVerification{
		AfterEachBackup: annotationToField(meta, v1beta2.BackupVerifyAfterEachAnnotation, kept, isAfterEachValue) == afterEachValue,
		Schedule:        annotationToField(meta, v1beta2.BackupVerifyScheduleAnnotation, kept, anyValue),
		TimeZone:        annotationToField(meta, v1beta2.BackupVerifyTimeZoneAnnotation, kept, anyValue),
	}
	if v == (BackupVerification{}) && !empty {
		return nil
	}
	return &v
}
