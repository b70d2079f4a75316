package crd

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// waitEstablished returns nil once the CRD name has the conditions NamesAccepted=True and
// Established=True. It reads the CRD, then watches it from the resourceVersion it read, so no
// change is missed between the two; when the watch ends (server timeout, resourceVersion too
// old) it reads again. It fails fast with ErrNamesNotAccepted when NamesAccepted is False, and
// when ctx is done it reports the conditions it saw last.
func waitEstablished(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, name string, log logrus.FieldLogger) error {
	var last *apiextensionsv1.CustomResourceDefinition
	timedOut := func(err error) error {
		return fmt.Errorf("waiting for CustomResourceDefinition %s to be established (%s): %w", name, describe(last), err)
	}
	for {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return timedOut(ctx.Err())
			}
			return fmt.Errorf("getting CustomResourceDefinition %s: %w", name, err)
		}
		last = crd
		if done, err := established(crd); done || err != nil {
			if done {
				log.Info("CustomResourceDefinition is established")
			}
			return err
		}

		w, err := crds.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: crd.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return timedOut(ctx.Err())
			}
			return fmt.Errorf("watching CustomResourceDefinition %s: %w", name, err)
		}
		done, err := watchUntilEstablished(ctx, w, name, &last)
		w.Stop()
		switch {
		case done:
			log.Info("CustomResourceDefinition is established")
			return nil
		case err != nil:
			return err
		case ctx.Err() != nil:
			return timedOut(ctx.Err())
		}
		log.Debug("Watch of CustomResourceDefinition ended, reading it again")
	}
}

// watchUntilEstablished consumes w until the CRD name is established (true, nil), its names are
// refused or it is deleted (false, error), or the watch or ctx ends (false, nil). It records
// every version of the CRD it sees in last.
func watchUntilEstablished(ctx context.Context, w watch.Interface, name string, last **apiextensionsv1.CustomResourceDefinition) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			if ev.Type == watch.Error {
				// Typically 410 Gone: the resourceVersion is too old. Read again.
				return false, nil
			}
			crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
			if !ok || crd.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("CustomResourceDefinition %s was deleted while waiting for it to be established", crd.Name)
			}
			*last = crd
			if done, err := established(crd); done || err != nil {
				return done, err
			}
		}
	}
}

// established reports whether crd has NamesAccepted=True and Established=True, and returns an
// error wrapping ErrNamesNotAccepted when NamesAccepted is False.
func established(crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	names := condition(crd, apiextensionsv1.NamesAccepted)
	if names != nil && names.Status == apiextensionsv1.ConditionFalse {
		return false, fmt.Errorf("CustomResourceDefinition %s: %w: %s: %s", crd.Name, ErrNamesNotAccepted, names.Reason, names.Message)
	}
	est := condition(crd, apiextensionsv1.Established)
	return names != nil && names.Status == apiextensionsv1.ConditionTrue &&
		est != nil && est.Status == apiextensionsv1.ConditionTrue, nil
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// describe summarizes the conditions of crd for an error message.
func describe(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd == nil {
		return "not read yet"
	}
	if len(crd.Status.Conditions) == 0 {
		return "no conditions yet"
	}
	s := ""
	for i, c := range crd.Status.Conditions {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += " " + c.Reason
		}
	}
	return s
}
